package floe.conformance;

import java.time.Duration;

/** The time a check has left; every wait in a check is bounded by it. */
final class Deadline {
    private final long endNanos;

    Deadline(Duration budget) {
        this.endNanos = System.nanoTime() + budget.toNanos();
    }

    Duration remaining() {
        long left = endNanos - System.nanoTime();
        return Duration.ofNanos(Math.max(left, 0));
    }

    long remainingMillis() {
        return remaining().toMillis();
    }

    boolean expired() {
        return remainingMillis() <= 0;
    }

    /** Fails the check with "timed out: what" once the deadline has passed. */
    void check(String what) {
        if (expired()) {
            throw new CheckFailed("timed out: " + what);
        }
    }

    /** The shorter of limit and the time left (at least 1 ms, for poll timeouts). */
    Duration atMost(Duration limit) {
        Duration left = remaining();
        Duration d = left.compareTo(limit) < 0 ? left : limit;
        return d.isZero() ? Duration.ofMillis(1) : d;
    }
}
