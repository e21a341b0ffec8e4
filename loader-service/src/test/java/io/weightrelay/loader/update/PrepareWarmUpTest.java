package io.weightrelay.loader.update;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.loader.pipeline.WorkerBuffers;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import org.junit.jupiter.api.Test;

/**
 * The start-up warm-up goes through prepare's checks for real: its synthetic buffers are what
 * engines would register, so every slice of both modes passes validation and gets a schedule.
 */
class PrepareWarmUpTest {

    @Test
    void everySliceOfBothModesIsCheckedAndScheduled() {
        PrepareWarmUp.Scheduled scheduled = PrepareWarmUp.warmUp();

        // Four instances per mode, each with batches to run (small-moe spans several).
        assertThat(scheduled.slices()).isEqualTo(8);
        assertThat(scheduled.batches()).isGreaterThanOrEqualTo(8);
    }

    @Test
    void theSyntheticBuffersAreTheOnesEachWorkerRegisters() {
        SourceManifest source =
                Fragmenter.fragment(PrepareWarmUp.MODEL, ModelCatalog.tensors(PrepareWarmUp.MODEL));
        TargetPlacement direct =
                Placements.of(ModelCatalog.layout(PrepareWarmUp.MODEL), 2, 4, 2, 1, Mode.DIRECT, 1);

        for (WorkerBuffers w : PrepareWarmUp.buffers(source, direct)) {
            Worker worker =
                    direct.workers().stream()
                            .filter(x -> x.id().equals(w.workerId()))
                            .findFirst()
                            .orElseThrow();
            // One buffer per parameter the worker holds, in its own segment.
            assertThat(w.buffers())
                    .hasSize(
                            (int)
                                    worker.fragments().stream()
                                            .map(f -> f.buffer())
                                            .distinct()
                                            .count())
                    .allSatisfy(b -> assertThat(b.segment()).isEqualTo(worker.segment()));
        }
    }
}
