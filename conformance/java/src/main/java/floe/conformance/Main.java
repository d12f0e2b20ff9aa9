package floe.conformance;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * Java client (kafka-clients) conformance checks against a Kafka-compatible
 * cluster.
 *
 * <pre>Main BOOTSTRAP [NAME-REGEX]</pre>
 *
 * Prints "PASS name" or "FAIL name: reason" per check and "N passed, N failed";
 * exits with 1 if any check failed. Each check has its own deadline (system
 * property conformance.check.timeout.s, default 60 s).
 */
public final class Main {
    /** Time for a check's cleanup (clients closed, topics deleted) after its deadline. */
    private static final Duration CLEANUP_GRACE = Duration.ofSeconds(20);

    private Main() {
    }

    static List<Check> checks() {
        List<Check> all = new ArrayList<>();
        all.addAll(AdminChecks.all());
        all.addAll(ProduceChecks.all());
        all.addAll(GroupChecks.all());
        all.addAll(OffsetChecks.all());
        all.addAll(TxnChecks.all());
        all.addAll(StreamsChecks.all());
        all.addAll(ShareChecks.all());
        if (!"1".equals(System.getenv("CONFORMANCE_KAFKA"))) {
            all.addAll(ViewChecks.all()); // floe's own features
            all.addAll(ShareChecks.floeOnly());
        }
        all.addAll(SaslChecks.all());
        return all;
    }

    public static void main(String[] args) {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: Main BOOTSTRAP [NAME-REGEX]");
            System.exit(2);
        }
        String bootstrap = args[0];
        Pattern filter = Pattern.compile(args.length == 2 ? args[1] : ".*");
        Duration budget = Duration.ofSeconds(Long.getLong("conformance.check.timeout.s", 60));

        int passed = 0;
        int failed = 0;
        for (Check check : checks()) {
            if (!filter.matcher(check.name()).find()) {
                continue;
            }
            String failure = run(check, bootstrap, budget);
            if (failure == null) {
                passed++;
                System.out.println("PASS " + check.name());
            } else {
                failed++;
                System.out.println("FAIL " + check.name() + ": " + failure);
            }
            System.out.flush();
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    /** Runs one check on its own thread; the failure reason, or null if it passed. */
    private static String run(Check check, String bootstrap, Duration budget) {
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "check-" + check.name());
            t.setDaemon(true);
            return t;
        });
        Deadline deadline = new Deadline(budget);
        Future<?> result = executor.submit(() -> {
            try (Env env = new Env(bootstrap, check.name(), deadline)) {
                check.body().run(env);
            }
            return null;
        });
        try {
            result.get(budget.plus(CLEANUP_GRACE).toMillis(), TimeUnit.MILLISECONDS);
            return null;
        } catch (TimeoutException e) {
            result.cancel(true);
            return "hung: no answer within " + budget.plus(CLEANUP_GRACE).toSeconds() + " s";
        } catch (ExecutionException e) {
            return describe(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        } finally {
            executor.shutdownNow();
        }
    }

    /** A one-line description of a failure: its message, or its class and message. */
    static String describe(Throwable t) {
        if (t instanceof CheckFailed) {
            return t.getMessage();
        }
        StringBuilder sb = new StringBuilder(t.getClass().getSimpleName());
        if (t.getMessage() != null) {
            sb.append(": ").append(t.getMessage());
        }
        Throwable cause = t.getCause();
        if (cause != null && cause != t && cause.getMessage() != null
                && !String.valueOf(t.getMessage()).contains(cause.getMessage())) {
            sb.append(" (caused by ").append(cause.getClass().getSimpleName())
                    .append(": ").append(cause.getMessage()).append(')');
        }
        return sb.toString().replace('\n', ' ');
    }
}
