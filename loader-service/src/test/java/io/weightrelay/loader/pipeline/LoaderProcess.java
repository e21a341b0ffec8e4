package io.weightrelay.loader.pipeline;

import io.weightrelay.testkit.process.ChildJvm;
import java.io.IOException;
import java.nio.file.Path;

/** Starts {@link LoaderProcessMain} loaders, each in a child JVM driven over its line channel. */
final class LoaderProcess {
    private LoaderProcess() {}

    static ChildJvm start(
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
        return ChildJvm.start(
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
                Integer.toString(failAtBatch));
    }
}
