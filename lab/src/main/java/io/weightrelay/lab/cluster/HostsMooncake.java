package io.weightrelay.lab.cluster;

import io.weightrelay.lab.hosts.Host;
import io.weightrelay.lab.hosts.HostProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

/**
 * Mooncake on a {@link io.weightrelay.lab.hosts.HostLab}: the pinned wheel's {@code
 * mooncake_master} on one host, at that host's own control address (beside Redis: both are
 * directories the services ask, not data paths), and the {@code relay.dataplane.*} arguments that
 * put a service of any host on it. Each service's agent runs inside its service's host (it is the
 * service's child, so it inherits the host's namespaces and its {@code /dev/shm}); its Transfer
 * Engine and store client are pinned to the host's data-plane address ({@code
 * relay.dataplane.mooncake.hostname}, which the agent also sets as {@code MC_TCP_BIND_ADDRESS}), so
 * every segment byte between hosts crosses the data-plane network, and nothing of Mooncake's
 * listens on an address outside the lab's 198.18.0.0/15. Unlike {@link MooncakeLab} no namespace of
 * its own is needed: the hosts are those namespaces.
 *
 * <p>Ownership: the master is a process of its host, stopped when the host lab closes; the agents'
 * sockets and logs are in {@code workDir}, which the caller owns ({@link #removeSockets} once the
 * services ended).
 */
final class HostsMooncake {

    /** How long the master may take to listen (it starts while services start). */
    private static final Duration LISTENING = Duration.ofSeconds(60);

    private final String master;
    private final Path pythonSource;
    private final Path workDir;

    private HostsMooncake(String master, Path pythonSource, Path workDir) {
        this.master = master;
        this.pythonSource = pythonSource;
        this.workDir = workDir;
    }

    /**
     * Starts a master on {@code host}'s control address and waits until its rpc port answers there.
     *
     * @param pythonSource the directory holding the {@code weight_relay} package (the repository's
     *     {@code python/src}), where the agents run from
     * @param workDir the agents' sockets and logs, and the master's log (short: a socket path has
     *     at most 107 bytes)
     */
    static HostsMooncake start(Host host, Path pythonSource, Path workDir)
            throws InterruptedException {
        String address = host.controlAddress();
        HostProcess process =
                host.start(
                        "mooncake_master",
                        List.of(
                                MooncakeLab.VENV.resolve("bin/mooncake_master").toString(),
                                "--rpc_port=" + MooncakeLab.RPC_PORT,
                                "--rpc_address=" + address,
                                "--metrics_host=" + address,
                                "--metrics_port=" + (MooncakeLab.RPC_PORT + 1),
                                "--default_kv_lease_ttl=" + MooncakeLab.LEASE_TTL_MS),
                        workDir);
        host.awaitListening(address, MooncakeLab.RPC_PORT, LISTENING, process);
        return new HostsMooncake(
                address + ":" + MooncakeLab.RPC_PORT, pythonSource.toAbsolutePath(), workDir);
    }

    /**
     * Removes the agents' unix sockets from the work directory once every service ended (an agent
     * that is killed leaves its socket behind); the logs stay.
     */
    void removeSockets() {
        try (Stream<Path> files = Files.list(workDir)) {
            for (Path f : files.filter(f -> f.toString().endsWith(".sock")).toList()) {
                Files.deleteIfExists(f);
            }
        } catch (IOException e) {
            System.err.println(
                    "cannot remove the Mooncake agents' sockets in " + workDir + ": " + e);
        }
    }

    /** The master's rpc {@code host:port} on the control network. */
    String master() {
        return master;
    }

    /**
     * The arguments that run a service of {@code host} on this Mooncake: its agent reaches the
     * master over the control network and binds and advertises the host's data-plane address.
     */
    List<String> serviceArgs(Host host) {
        return List.of(
                "--relay.dataplane.engine=mooncake",
                "--relay.dataplane.mooncake.master=" + master,
                "--relay.dataplane.mooncake.python=" + MooncakeLab.VENV.resolve("bin/python"),
                "--relay.dataplane.mooncake.python-path=" + pythonSource,
                "--relay.dataplane.mooncake.hostname=" + host.dataAddress(),
                "--relay.dataplane.mooncake.work-dir=" + workDir,
                "--relay.dataplane.mooncake.lease-wait=10s");
    }
}
