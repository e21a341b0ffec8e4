package io.weightrelay.publisher.segment;

import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * The node's store segment and the data plane it lives in.
 *
 * @param node node label: engines with the same label copy over shared memory, others over tcp
 * @param name segment name, unique per data-plane key prefix
 * @param size segment size; created and pre-faulted once at start-up, reused every generation
 * @param redisUri the store's object directory
 * @param keyPrefix prefix of the data plane's Redis keys (starts with {@code wr:})
 * @param tcpBindHost where the Transfer Engine's tcp server listens (loopback by default)
 * @param tcpPort its port, 0 for any free port
 * @param shmDir directory of segment files
 * @param ioTimeout after this silence a peer counts as gone
 * @param register register the segment with control-api's registry and keep it alive (checkpoint
 *     saves find their owners there)
 * @param adminUrl base URL control-api calls for owner duties; default {@code
 *     http://127.0.0.1:<server port>}
 * @param heartbeat interval of registry heartbeats (well inside control-api's segment TTL)
 */
@Validated
@ConfigurationProperties("relay.segment")
public record SegmentProperties(
        @NotBlank @DefaultValue("node-0") String node,
        @NotBlank @DefaultValue("publisher-node-0") String name,
        @NotNull @DefaultValue("1GB") DataSize size,
        @NotBlank @DefaultValue("redis://127.0.0.1:6379") String redisUri,
        @NotBlank @DefaultValue("wr:dp:") String keyPrefix,
        @NotBlank @DefaultValue("127.0.0.1") String tcpBindHost,
        @DefaultValue("0") int tcpPort,
        @NotNull @DefaultValue("/dev/shm") Path shmDir,
        @NotNull @DefaultValue("30s") Duration ioTimeout,
        @DefaultValue("true") boolean register,
        String adminUrl,
        @NotNull @DefaultValue("5s") Duration heartbeat) {}
