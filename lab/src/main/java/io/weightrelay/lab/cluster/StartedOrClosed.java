package io.weightrelay.lab.cluster;

import java.util.concurrent.Callable;

/**
 * A lab starts whole or not at all: when a start fails, every log tail is printed and whatever did
 * start is stopped before the failure is thrown on. Work on a started lab fails the same way, with
 * the log tails printed first.
 */
public final class StartedOrClosed {

    private StartedOrClosed() {}

    /** A lab: logs to show after a failure, processes to stop. */
    public interface Lab extends AutoCloseable {
        void dumpLogs();

        @Override
        void close();

        /**
         * Runs {@code work} on this lab; when it fails (an exception, or an assertion of a test),
         * every log tail is printed before the failure is thrown on.
         */
        default <T> T showingLogsOnFailure(Callable<T> work) throws Exception {
            try {
                return work.call();
            } catch (Exception | Error e) {
                dumpLogs();
                throw e;
            }
        }

        /** As {@link #showingLogsOnFailure(Callable)}, for work without a result. */
        default void showingLogsOnFailure(Step work) throws Exception {
            showingLogsOnFailure(
                    () -> {
                        work.run();
                        return null;
                    });
        }
    }

    /** A step on a lab: starting its processes, or work on it. */
    public interface Step {
        void run() throws Exception;
    }

    /** Runs {@code start} and returns {@code lab}, or shows its logs, closes it and rethrows. */
    static <L extends Lab> L start(L lab, Step start) throws Exception {
        try {
            start.run();
            return lab;
        } catch (Exception | Error e) {
            lab.dumpLogs();
            lab.close();
            throw e;
        }
    }
}
