package io.weightrelay.lab.cluster;

import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.dataplane.MooncakeConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The Mooncake side of a lab on {@code relay.dataplane.engine=mooncake}: the pinned wheel's {@code
 * mooncake_master} in a network namespace made for it with only its loopback up, and the {@code
 * relay.dataplane.*} properties that make every service run its Mooncake agent in that namespace.
 * Mooncake's listeners (the master's, every agent's Transfer Engine and store client) bind the
 * wildcard address whatever they are told, so the namespace is what keeps each of them on a
 * loopback no other process of the machine shares; the services' JVMs stay outside it (they reach
 * their agents over a unix socket and share memory with them through {@code /dev/shm}). Needs root
 * and {@code ip netns}.
 *
 * <p>Ownership: {@link #close} kills the master, deletes the namespace and leaves only the logs
 * (the master's and every agent's) in its work directory; agents end with their services.
 */
public final class MooncakeLab implements AutoCloseable {

    /** The venv with the pinned Mooncake wheel (the test venv, {@code python/requirements.txt}). */
    public static final Path VENV =
            Path.of(System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv"));

    /** The master's rpc port inside its namespace (no other process listens there). */
    static final int RPC_PORT = 50051;

    /**
     * The read lease the master gives (its {@code --default_kv_lease_ttl}). A ranged get renews its
     * lease at half of what is left, so a read expires ({@code LEASE_EXPIRED}) only when the
     * reading agent's waiting thread or the master is starved for over half the TTL: with 500 ms a
     * 250 ms stall did it, and on the lab's 2 cores shared by a whole cluster (and the other jobs
     * of the machine) a Mooncake bench round failed that way. 5 s puts the stall that expires a
     * read at 2.5 s, ten times more than that; the store client reads an expired range once more
     * anyway. The price is the wait of a removal of an object just read (a lab's garbage collection
     * right after an update): at most the TTL, inside the services' {@code lease-wait} of 10 s
     * (Mooncake's own default TTL is 10 s).
     */
    static final int LEASE_TTL_MS = 5_000;

    private final String netns;
    private final Path workDir;
    private final Path pythonSource;
    private final Process master;

    private MooncakeLab(String netns, Path workDir, Path pythonSource, Process master) {
        this.netns = netns;
        this.workDir = workDir;
        this.pythonSource = pythonSource;
        this.master = master;
    }

    /**
     * Starts a master in a new namespace and waits until its rpc port answers there.
     *
     * @param pythonSource the directory holding the {@code weight_relay} package (the repository's
     *     {@code python/src}), where the services' agents run from
     */
    public static MooncakeLab start(Path pythonSource) throws IOException, InterruptedException {
        String id = UUID.randomUUID().toString().substring(0, 8);
        String netns = "wr-mclab-" + id;
        // beside the lab's logs (a test's target/test-tmp); the agents' unix sockets live here too
        Path workDir = Files.createTempDirectory("wr-mclab-");
        run("ip", "netns", "add", netns);
        Process master = null;
        try {
            run("ip", "netns", "exec", netns, "ip", "link", "set", "lo", "up");
            master =
                    new ProcessBuilder(
                                    "ip",
                                    "netns",
                                    "exec",
                                    netns,
                                    VENV.resolve("bin/mooncake_master").toString(),
                                    "--rpc_port=" + RPC_PORT,
                                    "--rpc_address=127.0.0.1",
                                    "--metrics_host=127.0.0.1",
                                    "--metrics_port=" + (RPC_PORT + 1),
                                    "--default_kv_lease_ttl=" + LEASE_TTL_MS)
                            .redirectErrorStream(true)
                            .redirectOutput(workDir.resolve("mooncake_master.log").toFile())
                            .start();
            String probe =
                    "import socket,time\n"
                            + "for _ in range(300):\n"
                            + "    try:\n"
                            + "        socket.create_connection(('127.0.0.1', "
                            + RPC_PORT
                            + "), 1).close()\n"
                            + "        break\n"
                            + "    except OSError:\n"
                            + "        time.sleep(0.1)\n"
                            + "else:\n"
                            + "    raise SystemExit(1)\n";
            run("ip", "netns", "exec", netns, VENV.resolve("bin/python").toString(), "-c", probe);
            return new MooncakeLab(netns, workDir, pythonSource.toAbsolutePath(), master);
        } catch (IOException | InterruptedException | RuntimeException e) {
            new MooncakeLab(netns, workDir, pythonSource, master).close();
            throw e;
        }
    }

    /** Where the master's and the agents' logs are. */
    public Path workDir() {
        return workDir;
    }

    /**
     * The command prefix that runs a program in the master's namespace, beside the services' agents
     * (a worker's own Transfer Engine must be reachable from them).
     */
    public List<String> commandPrefix() {
        return List.of("ip", "netns", "exec", netns);
    }

    /** The master's rpc {@code host:port}, as the agents in its namespace reach it. */
    public String master() {
        return "127.0.0.1:" + RPC_PORT;
    }

    /**
     * The JVM options that put a service on this Mooncake: {@code relay.dataplane.engine=mooncake},
     * the master, the venv's interpreter, the package's source, the command prefix that runs each
     * agent in the master's namespace, and the agents' work directory.
     */
    public List<String> serviceJvmOptions() {
        List<String> out = new ArrayList<>();
        out.add("-Drelay.dataplane.engine=mooncake");
        out.add("-Drelay.dataplane.mooncake.master=" + master());
        out.add("-Drelay.dataplane.mooncake.python=" + VENV.resolve("bin/python"));
        out.add("-Drelay.dataplane.mooncake.python-path=" + pythonSource);
        out.add("-Drelay.dataplane.mooncake.hostname=127.0.0.1");
        out.add("-Drelay.dataplane.mooncake.command-prefix=ip,netns,exec," + netns);
        out.add("-Drelay.dataplane.mooncake.work-dir=" + workDir);
        out.add("-Drelay.dataplane.mooncake.lease-wait=10s");
        return out;
    }

    /**
     * A data plane for this JVM that only asks Mooncake (its agent mounts no capacity, so nothing
     * is ever placed in it): how a lab or demo locates objects the services stored, from outside
     * the services.
     *
     * @param nodeLabel names the agent's log
     */
    public DataplaneConfig readerConfig(String nodeLabel, String redisUri, String keyPrefix) {
        return dataplaneConfig(nodeLabel, redisUri, keyPrefix, 0);
    }

    /**
     * A data plane for this JVM on this Mooncake, its agent in the master's namespace mounting
     * {@code segmentSize} bytes of store capacity (0: a reading client), as a service's would.
     *
     * @param nodeLabel names the agent's log
     */
    public DataplaneConfig dataplaneConfig(
            String nodeLabel, String redisUri, String keyPrefix, long segmentSize) {
        return DataplaneConfig.builder(nodeLabel)
                .redisUri(redisUri)
                .keyPrefix(keyPrefix)
                .engine(DataplaneEngine.MOONCAKE)
                .mooncake(
                        new MooncakeConfig(
                                VENV.resolve("bin/python"),
                                pythonSource,
                                List.of("ip", "netns", "exec", netns),
                                master(),
                                "127.0.0.1",
                                segmentSize,
                                "tcp",
                                MooncakeConfig.P2P_HANDSHAKE,
                                workDir,
                                Duration.ofMinutes(2),
                                Duration.ofMinutes(1),
                                Duration.ofSeconds(10)))
                .build();
    }

    private static void run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] output = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed: " + new String(output).strip());
        }
    }

    @Override
    public void close() throws IOException, InterruptedException {
        if (master != null) {
            master.destroyForcibly().waitFor();
        }
        new ProcessBuilder("ip", "netns", "del", netns).start().waitFor();
        if (Files.isDirectory(workDir)) {
            try (Stream<Path> files = Files.walk(workDir)) {
                for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                    if (!f.toString().endsWith(".log") && !f.equals(workDir)) {
                        Files.deleteIfExists(f);
                    }
                }
            }
        }
    }
}
