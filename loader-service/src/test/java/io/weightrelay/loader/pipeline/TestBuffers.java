package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import java.util.List;

/** Receive buffers of test placements, as engines would register them. */
public final class TestBuffers {
    private TestBuffers() {}

    /** One compatibility image of {@code bytes} per worker of {@code placement}, in its segment. */
    public static List<WorkerBuffers> compatImages(TargetPlacement placement, long bytes) {
        return placement.workers().stream()
                .map(
                        w ->
                                new WorkerBuffers(
                                        w.id(),
                                        List.of(
                                                new BufferSpec(
                                                        Worker.COMPAT_BUFFER, w.segment(), bytes))))
                .toList();
    }
}
