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
 * @param role {@code trainer} (default: beside trainer ranks, owns the node's segment), {@code
 *     storage-unit} (a CPU-only owner of a segment that serves no trainer), {@code client} (beside
 *     trainer ranks but owns no store memory, {@code size} 0: stores into the storage units, its
 *     own node's first, which allocate for it; a checkpoint save never calls it)
 */
@Validated
@ConfigurationProperties("relay.segment")
public record SegmentProperties(
        @NotBlank @DefaultValue("node-0") String node,
        @NotBlank @DefaultValue("publisher-node-0") String name,
        @NotNull @DefaultValue("1GB") DataSize size,
        @DefaultValue("true") boolean register,
        String adminUrl,
        @NotNull @DefaultValue("5s") Duration heartbeat,
        @NotBlank @DefaultValue("trainer") String role) {

    public static final String TRAINER = "trainer";
    public static final String STORAGE_UNIT = "storage-unit";
    public static final String CLIENT = "client";

    public SegmentProperties {
        if (role != null
                && !role.equals(TRAINER)
                && !role.equals(STORAGE_UNIT)
                && !role.equals(CLIENT)) {
            throw new IllegalArgumentException(
                    "relay.segment.role is trainer, storage-unit or client, not '" + role + "'");
        }
        boolean empty = size != null && size.toBytes() == 0;
        if (CLIENT.equals(role) && !empty) {
            throw new IllegalArgumentException(
                    "relay.segment.role=client owns no store memory: set relay.segment.size=0 (it"
                            + " is "
                            + size
                            + ")");
        }
        if (!CLIENT.equals(role) && empty) {
            throw new IllegalArgumentException(
                    "relay.segment.size is 0 for role "
                            + role
                            + ", which owns a segment: a publisher without store memory is"
                            + " relay.segment.role=client");
        }
    }

    /** Whether this publisher serves trainer ranks (a storage unit serves none). */
    public boolean servesTrainers() {
        return !STORAGE_UNIT.equals(role);
    }

    /** Whether this publisher owns a segment (a client-only one owns none). */
    public boolean ownsSegment() {
        return !CLIENT.equals(role);
    }
}
