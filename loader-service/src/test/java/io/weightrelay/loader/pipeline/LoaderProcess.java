package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.ChildJvm;
import java.io.IOException;
import java.nio.file.Path;

/** A {@link LoaderProcessMain} child JVM and its channel. */
final class LoaderProcess implements AutoCloseable {
    final String instance;
    private final ChildJvm child;

    private LoaderProcess(String instance, ChildJvm child) {
        this.instance = instance;
        this.child = child;
    }

    static LoaderProcess start(
            String redisUri,
            String prefix,
            Path dir,
            String instance,
            String node,
            long generation,
            int slots,
            int timeoutSeconds,
            int failAtBatch)
            throws IOException {
        return new LoaderProcess(
                instance,
                ChildJvm.start(
                        "loader " + instance,
                        LoaderProcessMain.class,
                        redisUri,
                        prefix,
                        dir.toString(),
                        instance,
                        node,
                        Long.toString(generation),
                        Integer.toString(slots),
                        Integer.toString(timeoutSeconds),
                        Integer.toString(failAtBatch)));
    }

    /** Sends a command without waiting for the reply. */
    void send(String line) {
        child.send(line);
    }

    /** The next reply line (log lines the child prints on stdout are skipped). */
    String reply() {
        return child.reply();
    }

    /** Sends and expects OK; returns the text after it. */
    String ok(String line) {
        return child.ok(line);
    }

    @Override
    public void close() throws Exception {
        child.close();
    }
}
