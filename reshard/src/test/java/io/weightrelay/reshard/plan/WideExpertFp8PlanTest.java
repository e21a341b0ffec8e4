package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.catalog.Parallelism;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.catalog.SmallMoe;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.timing.Traffic;
import io.weightrelay.reshard.topology.Topology;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A wide-EP deployment in miniature, planned and run on real bytes: two block-FP8 instances of four
 * ranks, each spanning two nodes, experts whole by EP 4 and everything else whole on every rank
 * (data-parallel attention). Every stored byte (weights and scale tensors) is read once and lands
 * exactly where the placement says.
 */
class WideExpertFp8PlanTest {

    @Test
    void instancesSpanningNodesWithDpAttentionAndFp8AreReadOnceAndDeliveredExactly() {
        List<TensorLayout> layout = SmallMoe.blockFp8();
        // Small objects and reads, so weights span several bands, each with its scale fragment.
        SourceManifest manifest =
                Fragmenter.fragment(
                        "small-moe", layout.stream().map(TensorLayout::spec).toList(), 64 << 10);
        TargetPlacement placement =
                Placements.of(layout, 4, 2, new Parallelism(4, 4, true), Mode.DIRECT, 2);
        assertThat(placement.workers().stream().map(Worker::node).distinct()).hasSize(4);
        Topology topology = Topology.uniform(2, 4, 2, 100);
        Plan plan =
                Planner.plan(manifest, placement, topology, new Planner.Options(16 << 10, 1 << 16));

        ExactDelivery.assertExact(plan, manifest, placement, 7L);
        // replicated weights fan out from one reader to all eight ranks, yet the NICs stay even
        assertThat(Traffic.of(plan).nicBalance()).isLessThan(1.10);
    }
}
