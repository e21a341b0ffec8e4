package io.weightrelay.publisher.segment;

import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * The node's store segment. The data plane it lives in (bind and advertise host, tcp port, shm
 * directory, timeouts, Redis, key prefix, secret) is {@code relay.dataplane.*}, shared with every
 * service.
 *
 * @param node node label: engines with the same label copy over shared memory, others over tcp
 * @param name segment name, unique per data-plane key prefix
 * @param size segment size; created and pre-faulted once at start-up, reused every generation
 * @param register register the segment with control-api's registry and keep it alive (checkpoint
 *     saves find their owners there)
 * @param adminUrl base URL control-api calls for owner duties; empty: {@code
 *     http://<relay.dataplane.advertise-host>:<server port>}
 * @param heartbeat interval of registry heartbeats (well inside control-api's segment TTL)
 */
@Validated
@ConfigurationProperties("relay.segment")
public record SegmentProperties(
        @NotBlank @DefaultValue("node-0") String node,
        @NotBlank @DefaultValue("publisher-node-0") String name,
        @NotNull @DefaultValue("1GB") DataSize size,
        @DefaultValue("true") boolean register,
        String adminUrl,
        @NotNull @DefaultValue("5s") Duration heartbeat) {}
