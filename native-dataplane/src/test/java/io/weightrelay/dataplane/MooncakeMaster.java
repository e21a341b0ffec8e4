package io.weightrelay.dataplane;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * The pinned wheel's {@code mooncake_master} in a network namespace made for it with only its
 * loopback up (Mooncake's listeners bind the wildcard address whatever they are told), its rpc port
 * on 127.0.0.1:50051 and the read lease ({@code --default_kv_lease_ttl}) a test asks for; what the
 * Mooncake tests start once per class. Needs root and {@code ip netns}. {@link #close} kills the
 * master and deletes the namespace.
 */
final class MooncakeMaster implements AutoCloseable {
    static final Path VENV =
            Path.of(System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv"));
    static final Path PYTHON_SRC =
            Path.of(System.getProperty("user.dir")).resolve("../python/src").normalize();
    static final String RPC = "127.0.0.1:50051";

    /**
     * The read lease most tests run with: short, so that a test removing an object it just read
     * waits little; the Mooncake store client's one retry of a read whose lease ran out ({@code
     * MooncakeStoreClient}) is what keeps a slow read on a loaded machine from failing with it.
     */
    static final Duration LEASE_TTL = Duration.ofMillis(500);

    private final String netns;
    private final Process process;

    private MooncakeMaster(String netns, Process process) {
        this.netns = netns;
        this.process = process;
    }

    /** {@link #start(String, Path, Duration)} with the {@link #LEASE_TTL} most tests use. */
    static MooncakeMaster start(String prefix, Path log) throws IOException, InterruptedException {
        return start(prefix, log, LEASE_TTL);
    }

    /**
     * Starts a master in a new namespace named {@code prefix-<random>} whose reads are leased for
     * {@code leaseTtl} (0: every read's lease has run out by the time its bytes land); its output
     * goes to log.
     */
    static MooncakeMaster start(String prefix, Path log, Duration leaseTtl)
            throws IOException, InterruptedException {
        String netns = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
        run("ip", "netns", "add", netns);
        Process p = null;
        try {
            run("ip", "netns", "exec", netns, "ip", "link", "set", "lo", "up");
            p =
                    new ProcessBuilder(
                                    "ip",
                                    "netns",
                                    "exec",
                                    netns,
                                    VENV.resolve("bin/mooncake_master").toString(),
                                    "--rpc_port=50051",
                                    "--rpc_address=127.0.0.1",
                                    "--metrics_host=127.0.0.1",
                                    "--metrics_port=50052",
                                    "--default_kv_lease_ttl=" + leaseTtl.toMillis())
                            .redirectErrorStream(true)
                            .redirectOutput(log.toFile())
                            .start();
            String probe =
                    "import socket,time\n"
                            + "for _ in range(300):\n"
                            + "    try:\n"
                            + "        socket.create_connection(('127.0.0.1', 50051), 1).close()\n"
                            + "        break\n"
                            + "    except OSError:\n"
                            + "        time.sleep(0.1)\n"
                            + "else:\n"
                            + "    raise SystemExit(1)\n";
            run("ip", "netns", "exec", netns, VENV.resolve("bin/python").toString(), "-c", probe);
            return new MooncakeMaster(netns, p);
        } catch (IOException | InterruptedException | RuntimeException e) {
            new MooncakeMaster(netns, p).close();
            throw e;
        }
    }

    /**
     * The master's process id (the pid of the {@code ip netns exec} started: it execs the master),
     * for a test that stops the master for a while.
     */
    long pid() {
        return process.pid();
    }

    /** The command prefix that runs a process in the master's namespace. */
    List<String> prefix() {
        return List.of("ip", "netns", "exec", netns);
    }

    static void run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed");
        }
    }

    @Override
    public void close() throws IOException, InterruptedException {
        if (process != null) {
            process.destroyForcibly().waitFor();
        }
        new ProcessBuilder("ip", "netns", "del", netns).start().waitFor();
    }
}
