package io.weightrelay.dataplane;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How a {@linkplain DataplaneEngine#MOONCAKE Mooncake} data plane runs its Mooncake agent (the
 * {@code weight_relay.mooncake_agent} process, docs/dataplane.md).
 *
 * @param python the Python interpreter of a venv holding the pinned Mooncake wheel
 * @param pythonPath the directory holding the {@code weight_relay} package, or null when it is
 *     installed in that venv
 * @param prefix a command the agent runs through (such as {@code ip netns exec NAME}), or empty
 * @param master the Mooncake master's rpc {@code host:port}
 * @param hostname the agent's address for Mooncake (an IP literal the agent accepts)
 * @param segmentSize bytes of store capacity the agent mounts: Mooncake's store allocates objects
 *     only there ({@code global_segment_size}), never in segment files; 0 for a reading client
 * @param protocol Mooncake's transport: {@code tcp} (any network) or {@code rdma} (the wheel's RDMA
 *     transport; needs devices the agent finds itself)
 * @param metadata where Mooncake's Transfer Engines publish their segments: a metadata server URL
 *     (such as the master's embedded {@code http://host:port/metadata}), or {@value #P2P_HANDSHAKE}
 *     for none (engines exchange it peer to peer)
 * @param workDir where the agent's unix socket and log go
 * @param startTimeout how long the agent may take to become ready
 * @param commandTimeout how long one agent command may take before the agent is killed
 * @param leaseWait how long a remove waits for the leases reads took on an object to end (the
 *     master's {@code --default_kv_lease_ttl}) before it fails with {@code OBJECT_HAS_LEASE}
 */
public record MooncakeConfig(
        Path python,
        Path pythonPath,
        List<String> prefix,
        String master,
        String hostname,
        long segmentSize,
        String protocol,
        String metadata,
        Path workDir,
        Duration startTimeout,
        Duration commandTimeout,
        Duration leaseWait) {

    /** {@code metadata} when Mooncake's engines need no metadata server. */
    public static final String P2P_HANDSHAKE = "P2PHANDSHAKE";

    /** The transports the agent can set Mooncake up with. */
    public static final List<String> PROTOCOLS = List.of("tcp", "rdma");

    public MooncakeConfig {
        Objects.requireNonNull(python, "python");
        Objects.requireNonNull(metadata, "metadata");
        if (!PROTOCOLS.contains(protocol)) {
            throw new IllegalArgumentException(
                    "protocol must be one of " + PROTOCOLS + ", not '" + protocol + "'");
        }
        prefix = List.copyOf(Objects.requireNonNull(prefix, "prefix"));
        Objects.requireNonNull(master, "master");
        Objects.requireNonNull(hostname, "hostname");
        Objects.requireNonNull(workDir, "workDir");
        Objects.requireNonNull(startTimeout, "startTimeout");
        Objects.requireNonNull(commandTimeout, "commandTimeout");
        Objects.requireNonNull(leaseWait, "leaseWait");
        if (segmentSize < 0) {
            throw new IllegalArgumentException("segmentSize must be >= 0: " + segmentSize);
        }
    }
}
