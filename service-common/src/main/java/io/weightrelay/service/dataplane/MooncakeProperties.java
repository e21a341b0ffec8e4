package io.weightrelay.service.dataplane;

import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How a service runs its Mooncake agent when {@code relay.dataplane.engine=mooncake} ({@code
 * relay.dataplane.mooncake.*}); ignored with the built-in engine. {@link DataplaneSettings} checks
 * it and turns it into the engine's {@link io.weightrelay.dataplane.MooncakeConfig}. The store
 * capacity a segment owner's agent mounts is the owner's own segment size ({@code
 * relay.segment.size}); loaders and control-api mount none.
 *
 * @param master {@code host:port} of {@code mooncake_master}'s rpc port (its {@code --rpc_port});
 *     required with the Mooncake engine
 * @param metadataUrl where Mooncake's Transfer Engines publish their segments: a metadata server
 *     URL (the master's embedded one, {@code http://host:port/metadata}, with {@code
 *     --enable_http_metadata_server}), or {@code P2PHANDSHAKE} (none: engines exchange it peer to
 *     peer, what the agent uses by default)
 * @param python the interpreter of the venv holding the pinned Mooncake wheel and the {@code
 *     weight_relay} package
 * @param pythonPath a directory holding the {@code weight_relay} package when that venv does not
 *     have it installed (empty: installed)
 * @param hostname the address Mooncake binds and advertises for this agent (an IP literal in the
 *     agent's allowed networks): loopback on one machine, the host's own address on a cluster
 * @param commandPrefix a command the agent runs through, comma separated (such as {@code
 *     ip,netns,exec,NAME} to put it in the network namespace of its master); empty: none
 * @param protocol Mooncake's transport: {@code tcp} or {@code rdma}
 * @param workDir where the agents' unix sockets and logs go (short: a socket path has at most 107
 *     bytes)
 * @param startTimeout how long an agent may take to become ready
 * @param commandTimeout how long one agent command may take before the agent is killed
 * @param leaseWait how long a remove waits for the read leases on an object to end (the master's
 *     {@code --default_kv_lease_ttl}, 5 s unless set) before it fails with {@code OBJECT_HAS_LEASE}
 */
public record MooncakeProperties(
        String master,
        @NotBlank @DefaultValue("P2PHANDSHAKE") String metadataUrl,
        @NotNull @DefaultValue("/opt/weight-relay/venv/bin/python") Path python,
        Path pythonPath,
        @NotBlank @DefaultValue("127.0.0.1") String hostname,
        List<String> commandPrefix,
        @NotNull @Pattern(regexp = "tcp|rdma") @DefaultValue("tcp") String protocol,
        @NotNull @DefaultValue("/tmp/wr-mooncake") Path workDir,
        @NotNull @DefaultValue("60s") Duration startTimeout,
        @NotNull @DefaultValue("60s") Duration commandTimeout,
        @NotNull @DefaultValue("30s") Duration leaseWait) {

    public MooncakeProperties {
        commandPrefix = commandPrefix == null ? List.of() : List.copyOf(commandPrefix);
    }

    /** The defaults (what an empty {@code relay.dataplane.mooncake} binds to). */
    public static MooncakeProperties defaults() {
        return new MooncakeProperties(
                null,
                "P2PHANDSHAKE",
                Path.of("/opt/weight-relay/venv/bin/python"),
                null,
                "127.0.0.1",
                List.of(),
                "tcp",
                Path.of("/tmp/wr-mooncake"),
                Duration.ofSeconds(60),
                Duration.ofSeconds(60),
                Duration.ofSeconds(30));
    }
}
