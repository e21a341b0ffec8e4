package io.weightrelay.dataplane;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The real Mooncake for one test class: the pinned wheel's {@code mooncake_master} in a network
 * namespace made for it with only its loopback up (Mooncake's listeners bind the wildcard address),
 * as {@link MooncakeAgentTest} does, and the configuration that runs each data plane's agent there;
 * this JVM and Redis stay in the default namespace (the directory of receive segments is in Redis,
 * reached from Java only). Needs root and {@code ip netns}. A class {@link #start starts} it before
 * its tests and {@link #close closes} it after them: the master and its namespace go, and the work
 * directory (logs, the agents' sockets) with them.
 */
final class MooncakeTestEngines implements AutoCloseable {
    private static final int MIB = 1 << 20;

    /** How long a remove waits out a read's lease (the master's TTL is 500 ms). */
    static final Duration LEASE_WAIT = Duration.ofSeconds(10);

    private final MooncakeMaster master;
    private final Path workDir;

    private MooncakeTestEngines(MooncakeMaster master, Path workDir) {
        this.master = master;
        this.workDir = workDir;
    }

    static MooncakeTestEngines start() throws IOException, InterruptedException {
        Path workDir = Files.createTempDirectory(Path.of("/tmp"), "wr-mce");
        return new MooncakeTestEngines(
                MooncakeMaster.start("wr-mce", workDir.resolve("master.log")), workDir);
    }

    MooncakeMaster master() {
        return master;
    }

    Path workDir() {
        return workDir;
    }

    /** An agent mounting {@code segmentSize} bytes whose removes wait {@code leaseWait}. */
    MooncakeConfig config(long segmentSize, Duration leaseWait) {
        return new MooncakeConfig(
                MooncakeMaster.VENV.resolve("bin/python"),
                MooncakeMaster.PYTHON_SRC,
                master.prefix(),
                MooncakeMaster.RPC,
                "127.0.0.1",
                segmentSize,
                "tcp",
                MooncakeConfig.P2P_HANDSHAKE,
                workDir,
                Duration.ofSeconds(60),
                Duration.ofSeconds(60),
                leaseWait);
    }

    /** A Mooncake data plane whose agent mounts 64 MiB of store capacity. */
    Dataplane open(String nodeLabel, String keyPrefix) {
        return Dataplane.open(
                TestEngines.config(nodeLabel, keyPrefix)
                        .engine(DataplaneEngine.MOONCAKE)
                        .mooncake(config(64L * MIB, LEASE_WAIT))
                        .build());
    }

    @Override
    public void close() throws Exception {
        master.close();
        try (var files = Files.list(workDir)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
        }
        Files.deleteIfExists(workDir);
    }
}
