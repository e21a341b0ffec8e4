package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Parallelism;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.catalog.SmallMoe;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Topology;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Pipeline stages: each stage's ranks hold only the layers of their stage (the embedding with the
 * first, the final norm and head with the last), and a plan for such a placement reads every stored
 * byte once and delivers exactly the stages' bytes.
 */
class PipelineStagesTest {

    private static Map<String, Integer> layerOf(List<TensorLayout> layout) {
        Map<String, Integer> out = new HashMap<>();
        layout.forEach(t -> out.put(t.spec().name(), t.layer()));
        return out;
    }

    @Test
    void layersSplitIntoContiguousStagesAsEvenAsTheCountAllows() {
        Parallelism four = new Parallelism(8, 8, true, 4);
        assertThat(four.ranks()).isEqualTo(32);
        // Kimi-K2's 61 layers over 4 stages: 15, 15, 15, 16
        assertThat(four.stageOf(0, 61)).isZero();
        assertThat(four.stageOf(14, 61)).isZero();
        assertThat(four.stageOf(15, 61)).isEqualTo(1);
        assertThat(four.stageOf(44, 61)).isEqualTo(2);
        assertThat(four.stageOf(45, 61)).isEqualTo(3);
        assertThat(four.stageOf(60, 61)).isEqualTo(3);
        assertThat(four.stageOf(TensorLayout.BEFORE_LAYERS, 61)).isZero();
        assertThat(four.stageOf(TensorLayout.AFTER_LAYERS, 61)).isEqualTo(3);
        assertThatThrownBy(() -> new Parallelism(8, 8, true, 0)).hasMessageContaining("pp 0");
    }

    @Test
    void eachStageHoldsOnlyItsLayersAndThePlanIsExact() {
        List<TensorLayout> layout = SmallMoe.blockFp8();
        Map<String, Integer> layers = layerOf(layout);
        SourceManifest manifest =
                Fragmenter.fragment(
                        "small-moe", layout.stream().map(TensorLayout::spec).toList(), 64 << 10);
        // two instances of two stages of two ranks (EP 2), each stage on a node of its own
        TargetPlacement placement =
                Placements.of(layout, 4, 2, new Parallelism(2, 2, false, 2), Mode.DIRECT, 2);
        assertThat(placement.workers()).hasSize(8);
        for (Worker w : placement.workers()) {
            int rank = Integer.parseInt(w.id().substring(w.id().length() - 3));
            int stage = rank / 2;
            Set<Integer> held =
                    w.fragments().stream()
                            .map(f -> layers.get(f.tensor()))
                            .collect(Collectors.toSet());
            if (stage == 0) {
                assertThat(held).as(w.id()).containsExactlyInAnyOrder(-1, 0);
            } else {
                assertThat(held).as(w.id()).containsExactlyInAnyOrder(1, TensorLayout.AFTER_LAYERS);
            }
        }
        // the two stages of one instance together hold the whole model once per expert group
        long stageBytes =
                placement.workers().stream()
                        .filter(w -> w.instance().equals("i0000"))
                        .flatMap(w -> w.fragments().stream())
                        .mapToLong(TargetFragment::bytes)
                        .sum();
        assertThat(stageBytes).isGreaterThanOrEqualTo(manifest.totalBytes());

        Plan plan =
                Planner.plan(
                        manifest,
                        placement,
                        Topology.uniform(2, 4, 2, 100),
                        new Planner.Options(16 << 10, 1 << 16));
        ExactDelivery.assertExact(plan, manifest, placement, 11L);
    }

    @Test
    void badStageCountsAreRefusedNamingTheNumbers() {
        List<TensorLayout> layout = ModelCatalog.layout("small-moe");
        assertThatThrownBy(
                        () ->
                                Placements.of(
                                        layout,
                                        2,
                                        1,
                                        new Parallelism(2, 2, false, 3),
                                        Mode.DIRECT,
                                        2))
                .hasMessageContaining("pp 3")
                .hasMessageContaining("2 decoder layers");
        assertThatThrownBy(
                        () ->
                                Placements.of(
                                        layout,
                                        3,
                                        1,
                                        new Parallelism(2, 2, false, 2),
                                        Mode.DIRECT,
                                        2))
                .hasMessageContaining("1 instances x tp 2 x pp 2")
                .hasMessageContaining("3 nodes");
    }
}
