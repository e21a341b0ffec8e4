package io.weightrelay.reshard.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Block-FP8 weights and their scale tensors are planned like any tensors: a TP shard of a weight
 * brings the scale blocks it touches, single pull holds, and every byte lands where it belongs.
 */
class BlockFp8PlanTest {

    private static final int TP = 2;

    /** Column-parallel (split dim 0) and row-parallel (split dim 1) projections, plus a norm. */
    private static final List<TensorSpec> BF16 =
            List.of(
                    new TensorSpec("l.qkv_proj.weight", Shape.of(512, 384), DType.BF16, DType.BF16),
                    new TensorSpec("l.o_proj.weight", Shape.of(300, 384), DType.BF16, DType.BF16),
                    new TensorSpec("l.norm.weight", Shape.of(384), DType.BF16, DType.BF16));

    private static final Map<String, Integer> SPLIT =
            Map.of("l.qkv_proj.weight", 0, "l.o_proj.weight", 1);

    @Test
    void tensorParallelShardsGetTheirScaleBlocksAndEveryByteIsReadOnce() {
        List<TensorSpec> tensors = Fp8BlockRule.defaults().apply(BF16);
        // small fragments: several bands per weight, each with its scale fragment
        SourceManifest manifest = Fragmenter.fragment("m", tensors, 128 * 384);
        assertThat(manifest.fragments().stream().filter(f -> f.tensor().endsWith("_scale_inv")))
                .hasSize(4 + 3);

        TargetPlacement placement = tensorParallel(tensors, 2);
        Topology topology = Topology.uniform(2, 2, 2, 200);
        Plan plan = Planner.plan(manifest, placement, topology, new Planner.Options(4096, 1 << 16));

        ExactDelivery.assertExact(plan, manifest, placement, 18L);

        // o_proj is split at column 192, inside block column 1: both ranks need that block's scale
        Worker rank1 = placement.workers().get(1);
        TargetFragment oScale = fragmentOf(rank1, "l.o_proj.weight_scale_inv");
        assertThat(oScale.offset().dims()).containsExactly(0, 1);
        assertThat(oScale.shape().dims()).containsExactly(3, 2);
        TargetFragment qkvScale = fragmentOf(rank1, "l.qkv_proj.weight_scale_inv");
        assertThat(qkvScale.offset().dims()).containsExactly(2, 0);
        assertThat(qkvScale.shape().dims()).containsExactly(2, 3);
    }

    private static TargetFragment fragmentOf(Worker worker, String tensor) {
        return worker.fragments().stream()
                .filter(f -> f.tensor().equals(tensor))
                .findFirst()
                .orElseThrow();
    }

    /**
     * {@code instances} TP-2 instances, one per rollout node; workers hold their shards densely.
     */
    private static TargetPlacement tensorParallel(List<TensorSpec> tensors, int instances) {
        Map<String, Integer> weightOfScale = BlockScales.weightOfScale(tensors);
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < instances; i++) {
            for (int rank = 0; rank < TP; rank++) {
                List<TargetFragment> mine = new ArrayList<>();
                long cursor = 0;
                for (TensorSpec t : tensors) {
                    Shape[] box;
                    Integer weight = weightOfScale.get(t.name());
                    if (weight != null) {
                        Shape[] w = shard(tensors.get(weight), rank);
                        box = BlockScales.scaleBox(w[0], w[1]);
                    } else {
                        box = shard(t, rank);
                    }
                    mine.add(
                            TargetFragment.dense(
                                    t.name(),
                                    t.rolloutDtype(),
                                    t.shape(),
                                    box[0],
                                    box[1],
                                    "weights",
                                    cursor));
                    cursor += box[1].numel() * t.rolloutDtype().bytes();
                }
                workers.add(
                        new Worker(
                                "i" + i + "-r" + rank,
                                "i" + i,
                                Topology.rolloutNodeName(i),
                                rank,
                                1,
                                Mode.DIRECT,
                                "seg-i" + i + "-r" + rank,
                                mine));
            }
        }
        return new TargetPlacement(workers);
    }

    private static Shape[] shard(TensorSpec t, int rank) {
        Integer dim = SPLIT.get(t.name());
        if (dim == null) {
            return new Shape[] {Shape.zeros(t.shape().rank()), t.shape()};
        }
        long part = t.shape().dim(dim) / TP;
        return new Shape[] {Shape.zeros(2).with(dim, rank * part), t.shape().with(dim, part)};
    }
}
