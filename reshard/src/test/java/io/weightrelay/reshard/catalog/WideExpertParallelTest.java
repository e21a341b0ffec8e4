package io.weightrelay.reshard.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Topology;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Instances that span nodes with experts split by EP over all their ranks, data-parallel attention,
 * and block-FP8 weights whose scale tensors follow their weight's shard.
 */
class WideExpertParallelTest {

    private static final String EXPERTS = "model.layers.1.mlp.experts.";

    private static Map<String, Worker> byId(TargetPlacement placement) {
        return placement.workers().stream()
                .collect(Collectors.toMap(Worker::id, Function.identity()));
    }

    private static TargetFragment fragment(Worker w, String tensor) {
        return w.fragments().stream()
                .filter(f -> f.tensor().equals(tensor))
                .findFirst()
                .orElseThrow(() -> new AssertionError(w.id() + " holds no " + tensor));
    }

    /** Expert indices of layer 1 that a worker holds any part of. */
    private static TreeSet<Integer> experts(Worker w) {
        TreeSet<Integer> out = new TreeSet<>();
        for (TargetFragment f : w.fragments()) {
            if (f.tensor().startsWith(EXPERTS)) {
                String rest = f.tensor().substring(EXPERTS.length());
                out.add(Integer.parseInt(rest.substring(0, rest.indexOf('.'))));
            }
        }
        return out;
    }

    @Test
    void anInstanceOfEightRanksSpansTwoNodesWithOneWholeExpertPerRank() {
        // tiny has 8 routed experts; 2 instances x 8 ranks on 4 nodes of 4 ranks, 8 NICs each.
        TargetPlacement placement = directOnTiny(4, 2, new Parallelism(8, 8, true));
        Map<String, Worker> workers = byId(placement);
        assertThat(workers).hasSize(16);
        for (int instance = 0; instance < 2; instance++) {
            for (int rank = 0; rank < 8; rank++) {
                Worker w = workers.get(String.format("i%04d-r%03d", instance, rank));
                assertThat(w.instance()).isEqualTo(String.format("i%04d", instance));
                // instance 0 on nodes 0 and 1, instance 1 on nodes 2 and 3; two NICs per rank
                assertThat(w.node()).isEqualTo(Topology.rolloutNodeName(instance * 2 + rank / 4));
                assertThat(w.nicFirst()).isEqualTo(rank % 4 * 2);
                assertThat(w.nicCount()).isEqualTo(2);
                assertThat(experts(w)).containsExactly(rank);
                TargetFragment down = fragment(w, EXPERTS + rank + ".down_proj.weight");
                assertThat(down.shape()).isEqualTo(down.tensorShape());
            }
        }
        // ranks of one instance on different nodes share nothing but their fragment-list template
        assertThat(workers.get("i0000-r005").fragments())
                .isSameAs(workers.get("i0001-r005").fragments());
    }

    @Test
    void expertGroupsSplitTheirExpertsTensorParallelWhenEpIsBelowTp() {
        // tp 8, ep 4: rank r is in expert group r / 2 (experts 2g, 2g+1) and holds half of each.
        TargetPlacement placement = directOnTiny(2, 1, new Parallelism(8, 4, true));
        Map<String, Worker> workers = byId(placement);
        for (int rank = 0; rank < 8; rank++) {
            Worker w = workers.get(String.format("i0000-r%03d", rank));
            int group = rank / 2;
            assertThat(experts(w)).containsExactly(2 * group, 2 * group + 1);
            TargetFragment gate = fragment(w, EXPERTS + 2 * group + ".gate_proj.weight");
            long rows = gate.tensorShape().dim(0);
            assertThat(gate.offset().dims()).containsExactly(rank % 2 * rows / 2, 0);
            assertThat(gate.shape().dim(0)).isEqualTo(rows / 2);
            TargetFragment down = fragment(w, EXPERTS + (2 * group + 1) + ".down_proj.weight");
            long cols = down.tensorShape().dim(1);
            assertThat(down.offset().dims()).containsExactly(0, rank % 2 * cols / 2);
        }
        assertThatThrownBy(() -> new Parallelism(8, 3, true))
                .hasMessageContaining("ep 3 must divide tp 8");
        assertThatThrownBy(() -> directOnTiny(2, 1, new Parallelism(16, 16, true)))
                .hasMessageContaining("8 experts do not split over ep 16");
    }

    @Test
    void dpAttentionHoldsEveryNonExpertWeightWholeOnEveryRank() {
        List<TensorLayout> layout = ModelCatalog.layout("tiny");
        TargetPlacement dp =
                Placements.of(layout, 2, 1, new Parallelism(8, 8, true), Mode.DIRECT, 8);
        TargetPlacement tp =
                Placements.of(layout, 2, 1, new Parallelism(8, 8, false), Mode.DIRECT, 8);
        List<String> dense =
                layout.stream().filter(t -> t.expert() < 0).map(t -> t.spec().name()).toList();
        assertThat(dense)
                .contains(
                        "model.embed_tokens.weight",
                        "model.layers.0.self_attn.q_b_proj.weight",
                        "model.layers.0.mlp.gate_proj.weight",
                        "model.layers.1.mlp.shared_experts.down_proj.weight",
                        "lm_head.weight");
        for (Worker w : dp.workers()) {
            for (String name : dense) {
                TargetFragment f = fragment(w, name);
                assertThat(f.offset().dims()).as(name).containsOnly(0L);
                assertThat(f.shape()).as(name).isEqualTo(f.tensorShape());
            }
        }
        // without dp attention the same ranks split them: rank 3 holds an eighth of q_b_proj
        Worker rank3 = byId(tp).get("i0000-r003");
        TargetFragment qb = fragment(rank3, "model.layers.0.self_attn.q_b_proj.weight");
        long rows = qb.tensorShape().dim(0);
        assertThat(qb.offset().dim(0)).isEqualTo(rows * 3 / 8);
        assertThat(qb.shape().dim(0)).isEqualTo(rows * 4 / 8 - rows * 3 / 8);
        // the experts are placed the same either way
        for (int rank = 0; rank < 8; rank++) {
            String id = String.format("i0000-r%03d", rank);
            assertThat(experts(byId(dp).get(id))).isEqualTo(experts(byId(tp).get(id)));
        }
    }

    @Test
    void blockFp8LayoutAddsEachScaleTensorAfterItsWeightWithTheWeightsShard() {
        List<TensorLayout> bf16 = ModelCatalog.layout(SmallMoe.CONFIG);
        List<TensorLayout> fp8 = SmallMoe.blockFp8();
        long scales = fp8.stream().filter(t -> t.spec().name().endsWith("_scale_inv")).count();
        assertThat(fp8).hasSize(bf16.size() + (int) scales);
        for (int i = 0; i < fp8.size(); i++) {
            TensorLayout t = fp8.get(i);
            String name = t.spec().name();
            if (name.endsWith(BlockScales.SUFFIX)) {
                TensorLayout weight = fp8.get(i - 1);
                assertThat(name).isEqualTo(BlockScales.scaleName(weight.spec().name()));
                assertThat(t.spec()).isEqualTo(BlockScales.scaleOf(weight.spec()));
                assertThat(t.split()).isEqualTo(weight.split());
                assertThat(t.expert()).isEqualTo(weight.expert());
            }
        }
        Map<String, DType> dtypes =
                fp8.stream()
                        .collect(
                                Collectors.toMap(
                                        t -> t.spec().name(), t -> t.spec().rolloutDtype()));
        assertThat(dtypes.get("model.layers.1.mlp.experts.3.up_proj.weight"))
                .isEqualTo(DType.F8_E4M3);
        assertThat(dtypes.get("model.layers.0.self_attn.kv_a_proj_with_mqa.weight"))
                .isEqualTo(DType.F8_E4M3);
        assertThat(dtypes.get("model.embed_tokens.weight")).isEqualTo(DType.BF16);
        assertThat(dtypes.get("lm_head.weight")).isEqualTo(DType.BF16);
        assertThat(dtypes.get("model.layers.1.mlp.gate.weight")).isEqualTo(DType.BF16);
        assertThat(dtypes).doesNotContainKey("model.layers.1.mlp.gate.weight_scale_inv");
    }

    @Test
    void scaleTensorsFollowTheirWeightsShardBlockForBlock() {
        // tp 2, ep 1: experts split like any MLP, on whole blocks (256 rows or columns in halves)
        TargetPlacement placement =
                Placements.of(
                        SmallMoe.blockFp8(), 1, 1, new Parallelism(2, 1, false), Mode.DIRECT, 2);
        Worker rank1 = byId(placement).get("i0000-r001");
        TargetFragment gateScale = fragment(rank1, EXPERTS + "2.gate_proj.weight_scale_inv");
        assertThat(gateScale.tensorShape().dims()).containsExactly(2, 2);
        assertThat(gateScale.offset().dims()).containsExactly(1, 0);
        assertThat(gateScale.shape().dims()).containsExactly(1, 2);
        assertThat(gateScale.dtype()).isEqualTo(DType.F32);
        TargetFragment downScale = fragment(rank1, EXPERTS + "2.down_proj.weight_scale_inv");
        assertThat(downScale.offset().dims()).containsExactly(0, 1);
        assertThat(downScale.shape().dims()).containsExactly(2, 1);
        TargetFragment oScale = fragment(rank1, "model.layers.0.self_attn.o_proj.weight_scale_inv");
        assertThat(oScale.offset().dims()).containsExactly(0, 1);
        assertThat(oScale.shape().dims()).containsExactly(2, 1);
        // a replicated FP8 weight (kv_a_proj_with_mqa, 192 rows: a partial last band) brings all
        // of its scales
        TargetFragment kvA =
                fragment(rank1, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv");
        assertThat(kvA.shape()).isEqualTo(kvA.tensorShape());
        assertThat(kvA.tensorShape().dims()).containsExactly(2, 2);

        // ep 2 tp 2: each rank holds two whole experts and their whole scale tensors
        TargetPlacement ep =
                Placements.of(
                        SmallMoe.blockFp8(), 1, 1, new Parallelism(2, 2, false), Mode.DIRECT, 2);
        Worker epRank1 = byId(ep).get("i0000-r001");
        assertThat(experts(epRank1)).containsExactly(2, 3);
        for (TargetFragment f : epRank1.fragments()) {
            if (f.tensor().startsWith(EXPERTS)) {
                assertThat(f.shape()).as(f.tensor()).isEqualTo(f.tensorShape());
            }
        }
        // every FP8 weight a rank holds comes with its scale tensor, and no scale without it
        for (Worker w : ep.workers()) {
            TreeSet<String> names =
                    w.fragments().stream()
                            .map(TargetFragment::tensor)
                            .collect(Collectors.toCollection(TreeSet::new));
            for (TargetFragment f : w.fragments()) {
                if (f.dtype() == DType.F8_E4M3) {
                    assertThat(names).contains(BlockScales.scaleName(f.tensor()));
                }
                if (f.tensor().endsWith(BlockScales.SUFFIX)) {
                    assertThat(names)
                            .contains(
                                    f.tensor()
                                            .substring(
                                                    0,
                                                    f.tensor().length()
                                                            - BlockScales.SUFFIX.length()));
                }
            }
        }
    }

    @Test
    void blockFp8ShardsThatCutA128BlockAreRefusedNamingTheTensor() {
        // tp 4: o_proj's 256 input columns would be split into 64-column shards
        assertThatThrownBy(
                        () ->
                                Placements.of(
                                        SmallMoe.blockFp8(),
                                        1,
                                        1,
                                        new Parallelism(4, 4, false),
                                        Mode.DIRECT,
                                        4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tensor model.layers.0.self_attn.o_proj.weight")
                .hasMessageContaining("whole 128-element blocks")
                .hasMessageContaining("tp 4")
                .hasMessageContaining("elements 0 to 64 of its 256 along dim 1");
        // tp 4, ep 1: the experts' 256 rows would be split into 64-row shards, even with dp
        // attention
        assertThatThrownBy(
                        () ->
                                Placements.of(
                                        SmallMoe.blockFp8(),
                                        1,
                                        1,
                                        new Parallelism(4, 1, true),
                                        Mode.DIRECT,
                                        4))
                .hasMessageContaining("tensor model.layers.1.mlp.experts.0.gate_proj.weight")
                .hasMessageContaining("along dim 0");
        // the same ranks with dp attention and whole experts take every block whole
        TargetPlacement placement =
                Placements.of(
                        SmallMoe.blockFp8(), 1, 1, new Parallelism(4, 4, true), Mode.DIRECT, 4);
        assertThat(placement.workers()).hasSize(4);
        // the same tp 4 in BF16 cuts no block and is accepted, as before
        assertThat(
                        Placements.of(
                                        ModelCatalog.layout(SmallMoe.CONFIG),
                                        1,
                                        1,
                                        new Parallelism(4, 4, false),
                                        Mode.DIRECT,
                                        4)
                                .workers())
                .hasSize(4);
    }

    /** tiny placed in direct mode, 8 NICs per node. */
    private static TargetPlacement directOnTiny(int nodes, int instances, Parallelism parallelism) {
        return Placements.of(
                ModelCatalog.layout("tiny"), nodes, instances, parallelism, Mode.DIRECT, 8);
    }
}
