package io.weightrelay.reshard.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BlockScalesTest {

    private static TensorSpec bf16(String name, long... dims) {
        return new TensorSpec(name, Shape.of(dims), DType.BF16, DType.BF16);
    }

    private static final List<TensorSpec> DEEPSEEK_LIKE =
            List.of(
                    bf16("model.embed_tokens.weight", 1000, 256),
                    bf16("model.layers.0.input_layernorm.weight", 256),
                    bf16("model.layers.0.self_attn.q_a_proj.weight", 300, 256),
                    bf16("model.layers.0.self_attn.kv_a_proj_with_mqa.weight", 200, 256),
                    bf16("model.layers.0.self_attn.kv_a_layernorm.weight", 200),
                    bf16("model.layers.0.self_attn.o_proj.weight", 256, 256),
                    bf16("model.layers.0.mlp.gate.weight", 8, 256),
                    bf16("model.layers.0.mlp.gate.e_score_correction_bias", 8),
                    bf16("model.layers.0.mlp.experts.3.down_proj.weight", 256, 130),
                    bf16("model.layers.0.mlp.shared_experts.up_proj.weight", 130, 256),
                    bf16("model.norm.weight", 256),
                    bf16("lm_head.weight", 1000, 256));

    @Test
    void theDefaultRuleQuantisesProjectionsAndExpertsAndAddsEachScaleTensorAfterIt() {
        List<TensorSpec> out = Fp8BlockRule.defaults().apply(DEEPSEEK_LIKE);
        List<String> fp8 = new ArrayList<>();
        for (TensorSpec t : out) {
            if (t.rolloutDtype() == DType.F8_E4M3) {
                fp8.add(t.name());
            }
        }
        assertThat(fp8)
                .containsExactly(
                        "model.layers.0.self_attn.q_a_proj.weight",
                        "model.layers.0.self_attn.kv_a_proj_with_mqa.weight",
                        "model.layers.0.self_attn.o_proj.weight",
                        "model.layers.0.mlp.experts.3.down_proj.weight",
                        "model.layers.0.mlp.shared_experts.up_proj.weight");
        int q =
                out.indexOf(
                        out.stream()
                                .filter(t -> t.name().endsWith("q_a_proj.weight"))
                                .findFirst()
                                .orElseThrow());
        assertThat(out.get(q + 1))
                .isEqualTo(
                        new TensorSpec(
                                "model.layers.0.self_attn.q_a_proj.weight_scale_inv",
                                Shape.of(3, 2),
                                DType.F32,
                                DType.F32));
        assertThat(out).hasSize(DEEPSEEK_LIKE.size() + 5);
        // what the rule leaves alone is unchanged
        assertThat(out).contains(DEEPSEEK_LIKE.get(0), DEEPSEEK_LIKE.get(6), DEEPSEEK_LIKE.get(11));
        assertThat(BlockScales.weightOfScale(out)).hasSize(5);
        assertThat(Fp8BlockRule.defaults().apply(out)).isEqualTo(out);
        assertThat(Fp8BlockRule.of(List.of("*"), List.of("*norm*", "*bias")).apply(out))
                .as("scale tensors are never selected themselves")
                .filteredOn(t -> t.name().endsWith("_scale_inv"))
                .allMatch(t -> t.rolloutDtype() == DType.F32);
    }

    @Test
    void theRuleNamesTheTensorAndPatternItCannotTake() {
        Fp8BlockRule everything = Fp8BlockRule.of(List.of("*"), List.of());
        assertThatThrownBy(() -> everything.apply(DEEPSEEK_LIKE))
                .isInstanceOfSatisfying(
                        Fp8BlockRule.RuleException.class,
                        e -> {
                            assertThat(e.tensor())
                                    .isEqualTo("model.layers.0.input_layernorm.weight");
                            assertThat(e.pattern()).isEqualTo("*");
                        })
                .hasMessageContaining("shape [256]")
                .hasMessageContaining("only 2-D");
        TensorSpec ints = new TensorSpec("a_proj.weight", Shape.of(4, 4), DType.I32, DType.I32);
        assertThatThrownBy(() -> Fp8BlockRule.defaults().apply(List.of(ints)))
                .hasMessageContaining("a_proj.weight")
                .hasMessageContaining("I32");
        TensorSpec w = bf16("a_proj.weight", 4, 4);
        TensorSpec taken = bf16("a_proj.weight_scale_inv", 1, 1);
        assertThatThrownBy(() -> Fp8BlockRule.defaults().apply(List.of(w, taken)))
                .hasMessageContaining("already a tensor");
        assertThatThrownBy(() -> Fp8BlockRule.of(List.of("a b"), null))
                .isInstanceOfSatisfying(
                        Fp8BlockRule.RuleException.class,
                        e -> assertThat(e.pattern()).isEqualTo("a b"));
        assertThat(Fp8BlockRule.of(List.of("x.?"), List.of()).selectedBy("x.1")).isEqualTo("x.?");
        assertThat(Fp8BlockRule.of(List.of("x.?"), List.of()).selectedBy("x.12")).isNull();
    }

    @Test
    void fragmentsAreWholeBandsAndEachHasItsScaleFragment() {
        List<TensorSpec> tensors =
                Fp8BlockRule.defaults().apply(List.of(bf16("w_proj.weight", 1000, 300)));
        // 300 bytes a row in FP8: at most 100 rows by size, but never less than a 128-row band
        SourceManifest m = Fragmenter.fragment("m", tensors, 30_000);
        List<StoredFragment> weight =
                m.fragments().stream().filter(f -> f.tensor().equals("w_proj.weight")).toList();
        List<StoredFragment> scale =
                m.fragments().stream()
                        .filter(f -> f.tensor().equals("w_proj.weight_scale_inv"))
                        .toList();
        assertThat(weight).hasSize(8).hasSameSizeAs(scale);
        long row = 0;
        for (int i = 0; i < weight.size(); i++) {
            StoredFragment f = weight.get(i);
            assertThat(f.offset().dims()).containsExactly(row, 0);
            long end = Math.min(1000, row + 128);
            assertThat(f.shape().dims()).containsExactly(end - row, 300);
            assertThat(f.bytes()).isEqualTo((end - row) * 300);
            assertThat(scale.get(i).offset().dims()).containsExactly(row / 128, 0);
            assertThat(scale.get(i).shape().dims()).containsExactly(1, 3);
            assertThat(scale.get(i).bytes()).isEqualTo(12);
            row = end;
        }
        // larger fragments: bands spread evenly
        SourceManifest big = Fragmenter.fragment("m", tensors, 3L * 128 * 300);
        assertThat(big.fragments().stream().filter(f -> f.tensor().equals("w_proj.weight")))
                .extracting(f -> f.shape().dim(0))
                .containsExactly(384L, 384L, 232L);
        assertThat(SourceManifest.decode(big.encode())).isEqualTo(big);
    }

    @Test
    void manifestsBreakingTheConventionAreRefusedNamingTheTensor() {
        TensorSpec w = new TensorSpec("a_proj.weight", Shape.of(256, 8), DType.BF16, DType.F8_E4M3);
        assertThatThrownBy(() -> Fragmenter.fragment("m", List.of(w)))
                .hasMessageContaining("a_proj.weight_scale_inv");
        TensorSpec wrongScale =
                new TensorSpec("a_proj.weight_scale_inv", Shape.of(2, 2), DType.F32, DType.F32);
        assertThatThrownBy(() -> Fragmenter.fragment("m", List.of(w, wrongScale)))
                .hasMessageContaining("[2, 1]");
        TensorSpec cube = new TensorSpec("c", Shape.of(2, 2, 2), DType.BF16, DType.F8_E4M3);
        assertThatThrownBy(() -> Fragmenter.fragment("m", List.of(cube)))
                .hasMessageContaining("2-D");
        // fragments cut inside a band
        TensorSpec scale = BlockScales.scaleOf(w);
        List<StoredFragment> cut =
                List.of(
                        new StoredFragment("a@0", w.name(), Shape.of(0, 0), Shape.of(100, 8), 800),
                        new StoredFragment(
                                "a@1", w.name(), Shape.of(100, 0), Shape.of(156, 8), 1248),
                        new StoredFragment("s@0", scale.name(), Shape.of(0, 0), Shape.of(2, 1), 8));
        assertThatThrownBy(() -> new SourceManifest("m", List.of(w, scale), cut))
                .hasMessageContaining("not whole 128-row bands");
        // FP8 the trainer already holds is passed through, needs no scale
        TensorSpec stored = new TensorSpec("f", Shape.of(3), DType.F8_E4M3, DType.F8_E4M3);
        assertThat(Fragmenter.fragment("m", List.of(stored)).fragments()).hasSize(1);
    }

    @Test
    void theScaleTensorGoesToTheNodeOfItsWeight() {
        List<TensorSpec> tensors = Fp8BlockRule.defaults().apply(DEEPSEEK_LIKE);
        SourceManifest m = Fragmenter.fragment("m", tensors, 4096);
        PublisherAssignment a = PublisherAssignment.assign(m, Topology.uniform(3, 1, 1, 100));
        Map<String, String> node = a.byTensorName(m);
        for (Map.Entry<String, Integer> e : BlockScales.weightOfScale(tensors).entrySet()) {
            assertThat(node.get(e.getKey())).isEqualTo(node.get(tensors.get(e.getValue()).name()));
        }
        long sum = 0;
        for (long b : a.bytesPerNode()) {
            sum += b;
        }
        assertThat(sum).isEqualTo(m.totalBytes());
    }

    @Test
    void scaleBoxesCoverEveryBlockAWeightBoxTouches() {
        Shape[] aligned = BlockScales.scaleBox(Shape.of(256, 0), Shape.of(256, 384));
        assertThat(aligned[0].dims()).containsExactly(2, 0);
        assertThat(aligned[1].dims()).containsExactly(2, 3);
        Shape[] ragged = BlockScales.scaleBox(Shape.of(0, 192), Shape.of(512, 192));
        assertThat(ragged[0].dims()).containsExactly(0, 1);
        assertThat(ragged[1].dims()).containsExactly(4, 2);
    }
}
