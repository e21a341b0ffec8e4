package io.weightrelay.lab.cluster;

/**
 * A lab starts whole or not at all: when a start fails, every log tail is printed and whatever did
 * start is stopped before the failure is thrown on.
 */
final class StartedOrClosed {

    private StartedOrClosed() {}

    /** A lab: logs to show after a failure, processes to stop. */
    interface Lab extends AutoCloseable {
        void dumpLogs();

        @Override
        void close();
    }

    /** Starting the lab's processes. */
    interface Start {
        void run() throws Exception;
    }

    /** Runs {@code start} and returns {@code lab}, or shows its logs, closes it and rethrows. */
    static <L extends Lab> L start(L lab, Start start) throws Exception {
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
