package floe.conformance;

/** A check's expectation that did not hold; its message is the FAIL reason. */
final class CheckFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CheckFailed(String message) {
        super(message);
    }

    /** Fails with message unless condition holds. */
    static void expect(boolean condition, String message) {
        if (!condition) {
            throw new CheckFailed(message);
        }
    }

    /** Fails unless expected equals actual, naming what was compared. */
    static void expectEqual(Object expected, Object actual, String what) {
        if (!java.util.Objects.equals(expected, actual)) {
            throw new CheckFailed(what + ": expected " + expected + ", got " + actual);
        }
    }
}
