package io.weightrelay.dataplane;

import io.weightrelay.testkit.process.ChildJvm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A {@link PeerMain} child JVM: a data plane with one segment, driven by commands. */
final class PeerProcess implements AutoCloseable {
    /** The child server's io timeout, connection cap and idle timeout unless a test gives them. */
    static final long IO_TIMEOUT_MS = 30000;

    static final int MAX_CONNECTIONS = 256;
    static final long IDLE_TIMEOUT_MS = 60000;

    private final ChildJvm child;
    private final Path shmPath;
    private final int port;

    private PeerProcess(ChildJvm child) {
        this.child = child;
        String[] ready = child.ready().split(" ");
        this.port = Integer.parseInt(ready[0]);
        this.shmPath = Path.of(ready[1]);
    }

    static PeerProcess start(
            String redisUri, String keyPrefix, String nodeLabel, String segment, long size)
            throws IOException {
        return start(
                redisUri,
                keyPrefix,
                nodeLabel,
                segment,
                size,
                IO_TIMEOUT_MS,
                MAX_CONNECTIONS,
                IDLE_TIMEOUT_MS);
    }

    /** A child whose server uses the given io timeout, connection cap and idle timeout. */
    static PeerProcess start(
            String redisUri,
            String keyPrefix,
            String nodeLabel,
            String segment,
            long size,
            long ioTimeoutMs,
            int maxConnections,
            long idleTimeoutMs)
            throws IOException {
        return new PeerProcess(
                ChildJvm.start(
                        "peer",
                        PeerMain.class,
                        redisUri,
                        keyPrefix,
                        nodeLabel,
                        segment,
                        Long.toString(size),
                        Long.toString(ioTimeoutMs),
                        Integer.toString(maxConnections),
                        Long.toString(idleTimeoutMs)));
    }

    /** The port of the child engine's tcp server. */
    int port() {
        return port;
    }

    /** Sends one command and returns the text after "OK"; throws on "ERR". */
    String command(String line) {
        return child.ok(line);
    }

    /** Kills the child at once (SIGKILL), as a crash would. */
    void kill() throws InterruptedException {
        child.kill();
    }

    @Override
    public void close() throws Exception {
        child.close();
        Files.deleteIfExists(shmPath); // a killed child leaves its file behind
    }
}
