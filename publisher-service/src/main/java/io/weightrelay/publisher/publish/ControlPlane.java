package io.weightrelay.publisher.publish;

import io.weightrelay.api.StoredObject;
import io.weightrelay.reshard.manifest.GenerationId;
import java.util.List;
import java.util.Optional;

/**
 * What the publisher asks of control-api: the layout of an open generation and the registration of
 * stored objects. Implementations throw {@link io.weightrelay.service.problem.RelayException}s of
 * {@link PublishProblems} kinds.
 */
public interface ControlPlane {

    /**
     * The layout of an open generation.
     *
     * @throws io.weightrelay.service.problem.RelayException {@code generation-not-found}, or {@code
     *     control-api-failed}
     */
    GenerationLayout layout(GenerationId generation);

    /** Registers stored objects of an open generation (one call per batch). */
    void register(GenerationId generation, String publisher, List<StoredObject> objects);

    /**
     * Whether control-api knows the generation (in any state): false only on its 404.
     *
     * @throws io.weightrelay.service.problem.RelayException {@code control-api-failed} when it did
     *     not answer or refused otherwise
     */
    boolean knowsGeneration(GenerationId generation);

    /** Registers (or re-registers) this node's segment as a live owner and starts its TTL. */
    SegmentAnswer registerSegment(SegmentOffer offer);

    /**
     * A segment as its owner registers it with control-api: its name, node label, data-plane
     * endpoint, size and admin URL; {@code storageUnit}: a CPU-only owner that serves no trainer;
     * {@code storeEndpoint}: on Mooncake, the endpoint the master names this owner's replicas by
     * (null on the built-in engine).
     */
    record SegmentOffer(
            String segment,
            String node,
            String endpoint,
            long size,
            String adminUrl,
            boolean storageUnit,
            String storeEndpoint) {}

    /**
     * Renews the segment's TTL.
     *
     * @return empty if control-api no longer knows the segment (register it again)
     */
    Optional<SegmentAnswer> heartbeatSegment(String segment);

    /**
     * control-api's answer to a segment's registration or heartbeat: {@code incarnation}, the mark
     * of its Redis read fresh for the answer (a new one means Redis lost its data since), null from
     * a control-api that sends none.
     */
    record SegmentAnswer(String incarnation) {}

    /**
     * Tells control-api that {@code objects} objects of a generation were in {@code segment} when a
     * previous owner of it died: the generation becomes LOST (or aborted, if still open).
     * Idempotent. Sent with the owner token: control-api refuses a loss from a trainer token.
     */
    void loseGeneration(GenerationId generation, String segment, long objects, String reason);

    /**
     * Asks control-api to collect the model's garbage: the retired, aborted and lost generations no
     * lease holds, whose objects then free their space in the owners' segments.
     *
     * @return how many generations were collected
     */
    int collectGarbage(String model);

    /** The live storage-unit segments control-api knows, each with its node label. */
    default List<SegmentPeer> storageUnits() {
        return List.of();
    }

    /** A registered segment: its name and node label. */
    record SegmentPeer(String segment, String node) {}
}
