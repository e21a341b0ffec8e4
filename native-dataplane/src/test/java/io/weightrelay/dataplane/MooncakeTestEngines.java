package io.weightrelay.dataplane;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The real Mooncake for one test class, and its engine under test ({@link TestEngine}): the pinned
 * wheel's {@code mooncake_master} in a network namespace made for it with only its loopback up
 * (Mooncake's listeners bind the wildcard address), as {@link MooncakeAgentTest} does, and the
 * configuration that runs each data plane's agent there; this JVM and Redis stay in the default
 * namespace (the directory of receive segments is in Redis, reached from Java only). Needs root and
 * {@code ip netns}. Register it on a static field with {@code @RegisterExtension}: it starts the
 * master before the class's first test and stops it after its last, and the work directory (logs,
 * the agents' sockets) goes with it. Store capacity is the segment each agent mounts, local memory
 * a receive segment (shared memory this JVM and the agent both map).
 */
final class MooncakeTestEngines implements TestEngine, BeforeAllCallback, AfterAllCallback {
    private static final int MIB = 1 << 20;

    /** How long a remove waits out a read's lease (the master's TTL: 500 ms unless told). */
    static final Duration LEASE_WAIT = Duration.ofSeconds(10);

    private final Duration leaseTtl;
    private MooncakeMaster master;
    private Path workDir;

    /** A master leasing reads for {@link MooncakeMaster#LEASE_TTL}. */
    MooncakeTestEngines() {
        this(MooncakeMaster.LEASE_TTL);
    }

    /** A master leasing reads for {@code leaseTtl} ({@code --default_kv_lease_ttl}). */
    MooncakeTestEngines(Duration leaseTtl) {
        this.leaseTtl = leaseTtl;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws IOException, InterruptedException {
        workDir = Files.createTempDirectory(Path.of("/tmp"), "wr-mce");
        master = MooncakeMaster.start("wr-mce", workDir.resolve("master.log"), leaseTtl);
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
    @Override
    public Dataplane open(String nodeLabel, String keyPrefix) {
        return Dataplane.open(
                TestEngines.config(nodeLabel, keyPrefix)
                        .engine(DataplaneEngine.MOONCAKE)
                        .mooncake(config(64L * MIB, LEASE_WAIT))
                        .build());
    }

    /** The agent's mounted segment is the capacity: nothing to create. */
    @Override
    public String storeCapacity(Dataplane dp, String name, long size) {
        return ((MooncakeDataplane) dp).storeSegment();
    }

    @Override
    public LocalMemory memory(Dataplane dp, String name, int size) {
        return dp.createReceiveSegment(name, size);
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (master == null) {
            return; // it did not start
        }
        master.close();
        try (var files = Files.list(workDir)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
        }
        Files.deleteIfExists(workDir);
    }
}
