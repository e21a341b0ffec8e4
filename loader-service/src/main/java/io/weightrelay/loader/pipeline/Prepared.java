package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.Segment;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A prepared update: the validated slice's schedule, the registered staging and receive segments,
 * the fan-out counters' values before anyone could write, and the opening of the peer segments it
 * writes into (best effort; the apply waits for it before its first transfer).
 */
public record Prepared(
        PrepareRequest request,
        SliceSchedule slice,
        Segment staging,
        Map<String, Segment> ownSegments,
        Map<String, Long> notifyBaselines,
        SafetensorsLayout layout,
        CompletableFuture<Void> peersOpened) {}
