package io.weightrelay.reshard.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import java.util.List;
import org.junit.jupiter.api.Test;

class CatalogTest {
    private static long params(String model) {
        return ModelCatalog.tensors(model).stream().mapToLong(t -> t.shape().numel()).sum();
    }

    @Test
    void parameterCountsMatchThePublishedModels() {
        assertThat(ModelCatalog.names())
                .containsExactly(
                        "tiny",
                        "small-moe",
                        "qwen2.5-0.5b",
                        "qwen2.5-7b",
                        "llama3-70b",
                        "deepseek-v3",
                        "kimi-k2");
        assertThat(params("tiny")).isBetween(1_000_000L, 5_000_000L);
        assertThat(params("small-moe")).isBetween(1_000_000L, 3_000_000L);
        assertThat(params("qwen2.5-0.5b")).isBetween(490_000_000L, 500_000_000L);
        assertThat(params("qwen2.5-7b")).isBetween(7_500_000_000L, 7_700_000_000L);
        assertThat(params("llama3-70b")).isBetween(70_000_000_000L, 71_000_000_000L);
        assertThat(params("deepseek-v3")).isBetween(670_000_000_000L, 673_000_000_000L);
        assertThat(params("kimi-k2")).isBetween(1_020_000_000_000L, 1_040_000_000_000L);
        assertThat(ModelCatalog.tensors("kimi-k2")).hasSizeGreaterThan(60_000);
        assertThatThrownBy(() -> ModelCatalog.config("gpt-9")).hasMessageContaining("gpt-9");
    }

    @Test
    void directPlacementGivesEachInstanceExactlyOneModelAndExpertsWhole() {
        List<TensorLayout> layout = ModelCatalog.layout("tiny");
        long model = layout.stream().mapToLong(t -> t.spec().bytes()).sum();
        long replicated =
                layout.stream()
                        .filter(t -> t.split() == Split.REPLICATE && t.expert() < 0)
                        .mapToLong(t -> t.spec().bytes())
                        .sum();
        TargetPlacement placement = Placements.of(layout, 2, 2, 4, 4, Mode.DIRECT, 8);
        assertThat(placement.workers()).hasSize(8);
        long perInstance = 0;
        for (Worker w : placement.workers()) {
            assertThat(w.nicCount()).isEqualTo(2);
            if (w.instance().equals("i0000")) {
                perInstance += w.fragments().stream().mapToLong(TargetFragment::bytes).sum();
            }
            for (TargetFragment f : w.fragments()) {
                if (f.tensor().contains(".experts.")) {
                    assertThat(f.shape()).isEqualTo(f.tensorShape());
                }
            }
        }
        // Sharded tensors once per instance; replicated ones once per rank; kv heads here split.
        assertThat(perInstance).isEqualTo(model + 3 * replicated);
    }

    @Test
    void keyValueHeadsAreReplicatedWhenRanksOutnumberThem() {
        List<TensorLayout> layout = ModelCatalog.layout("qwen2.5-0.5b");
        TargetPlacement placement = Placements.of(layout, 1, 1, 4, 1, Mode.DIRECT, 8);
        TensorSpec k =
                layout.stream()
                        .map(TensorLayout::spec)
                        .filter(t -> t.name().equals("model.layers.0.self_attn.k_proj.weight"))
                        .findFirst()
                        .orElseThrow();
        List<Long> starts =
                placement.workers().stream()
                        .map(
                                w ->
                                        w.fragments().stream()
                                                .filter(f -> f.tensor().equals(k.name()))
                                                .findFirst()
                                                .orElseThrow())
                        .map(f -> f.offset().dim(0))
                        .toList();
        // Two kv heads of 64 rows over four ranks: ranks 0,1 hold head 0 and ranks 2,3 head 1.
        assertThat(starts).containsExactly(0L, 0L, 64L, 64L);
        assertThatThrownBy(() -> Placements.of(layout, 3, 1, 4, 1, Mode.DIRECT, 8))
                .hasMessageContaining("evenly");
    }

    @Test
    void ranksFillNodesOfTheGivenSizeInOrderAndTheLastNodeHoldsTheRest() {
        List<TensorLayout> layout = ModelCatalog.layout("tiny");
        // Five instances of tp 2 on nodes of 4 GPUs: two full nodes, then one of two ranks.
        TargetPlacement placement =
                Placements.of(layout, 3, 5, new Parallelism(2, 2, false), Mode.DIRECT, 4, 4);
        assertThat(placement.workers())
                .extracting(Worker::node)
                .containsExactly(
                        "rollout-0000",
                        "rollout-0000",
                        "rollout-0000",
                        "rollout-0000",
                        "rollout-0001",
                        "rollout-0001",
                        "rollout-0001",
                        "rollout-0001",
                        "rollout-0002",
                        "rollout-0002");
        // A node's slots keep their own NIC, also on the partly filled node.
        assertThat(placement.workers())
                .extracting(Worker::nicFirst)
                .containsExactly(0, 1, 2, 3, 0, 1, 2, 3, 0, 1);
        for (int nodes : new int[] {2, 4}) {
            assertThatThrownBy(
                            () ->
                                    Placements.of(
                                            layout,
                                            nodes,
                                            5,
                                            new Parallelism(2, 2, false),
                                            Mode.DIRECT,
                                            4,
                                            4))
                    .hasMessageContaining("fill 3 nodes of 4 GPUs, not " + nodes);
        }
    }
}
