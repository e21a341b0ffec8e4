package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.Segment;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import java.util.Map;

/**
 * A prepared update: the validated slice's schedule, the registered staging and receive segments,
 * and the fan-out counters' values before anyone could write.
 */
public record Prepared(
        PrepareRequest request,
        SliceSchedule slice,
        Segment staging,
        Map<String, Segment> ownSegments,
        Map<String, Long> notifyBaselines,
        SafetensorsLayout layout) {}
