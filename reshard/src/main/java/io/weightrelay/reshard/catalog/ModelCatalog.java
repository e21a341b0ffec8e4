package io.weightrelay.reshard.catalog;

import static io.weightrelay.reshard.catalog.ModelConfig.deepseek;
import static io.weightrelay.reshard.catalog.ModelConfig.dense;

import io.weightrelay.reshard.catalog.ModelConfig.Attention;
import io.weightrelay.reshard.catalog.ModelConfig.Mla;
import io.weightrelay.reshard.catalog.ModelConfig.Moe;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The catalogued models, from their published {@code config.json}: tensor names and shapes as the
 * Hugging Face checkpoints have them, in checkpoint iteration order (embeddings, layers, final
 * norm, output head).
 */
public final class ModelCatalog {
    private static final Map<String, ModelConfig> CONFIGS = new LinkedHashMap<>();

    static {
        // Small DeepSeek-style MoE with MLA (a few MB) so tests exercise every tensor kind.
        Mla tinyMla = new Mla(64, 32, 16, 8, 16);
        add(deepseek("tiny", 8192, 128, 256, 2, 4, new Moe(1, 64, 8, 1), tinyMla));
        // DeepSeek-shaped MoE (about 4 MB in BF16) whose projections span several 128 x 128 blocks,
        // so block-FP8 serving with whole blocks per rank has something to split: 4 heads,
        // hidden 256, 4 routed experts of intermediate 256, one shared.
        Mla smallMla = new Mla(128, 128, 64, 64, 64);
        add(deepseek("small-moe", 256, 256, 256, 2, 4, new Moe(1, 256, 4, 1), smallMla));
        add(dense("qwen2.5-0.5b", 151936, 896, 4864, 24, true, new Attention(14, 2, 64, true)));
        add(dense("qwen2.5-7b", 152064, 3584, 18944, 28, false, new Attention(28, 4, 128, true)));
        add(dense("llama3-70b", 128256, 8192, 28672, 80, false, new Attention(64, 8, 128, false)));
        // Kimi K2 keeps DeepSeek-V3's latent attention with half its heads, and more experts.
        Mla v3Mla = new Mla(1536, 512, 128, 64, 128);
        add(deepseek("deepseek-v3", 129280, 7168, 18432, 61, 128, new Moe(3, 2048, 256, 1), v3Mla));
        add(deepseek("kimi-k2", 163840, 7168, 18432, 61, 64, new Moe(1, 2048, 384, 1), v3Mla));
    }

    private ModelCatalog() {}

    private static void add(ModelConfig config) {
        CONFIGS.put(config.name(), config);
    }

    public static List<String> names() {
        return List.copyOf(CONFIGS.keySet());
    }

    public static ModelConfig config(String name) {
        ModelConfig config = CONFIGS.get(name);
        if (config == null) {
            throw new IllegalArgumentException(
                    "unknown model " + name + "; known: " + String.join(", ", CONFIGS.keySet()));
        }
        return config;
    }

    public static List<TensorLayout> layout(String name) {
        return layout(config(name));
    }

    public static List<TensorSpec> tensors(String name) {
        return layout(name).stream().map(TensorLayout::spec).toList();
    }

    public static List<TensorLayout> layout(ModelConfig c) {
        Builder b = new Builder(c);
        b.add("model.embed_tokens.weight", Split.DIM0, -1, c.vocab(), c.hidden());
        for (int i = 0; i < c.layers(); i++) {
            b.layer = i;
            String p = "model.layers." + i + ".";
            b.add(p + "input_layernorm.weight", Split.REPLICATE, -1, c.hidden());
            if (c.isMla()) {
                mlaAttention(b, c, p + "self_attn.");
            } else {
                gqaAttention(b, c, p + "self_attn.");
            }
            b.add(p + "post_attention_layernorm.weight", Split.REPLICATE, -1, c.hidden());
            if (c.isMoe() && i >= c.moe().firstDenseLayers()) {
                moe(b, c, p + "mlp.");
            } else {
                mlp(b, p + "mlp.", c.intermediate(), c.hidden(), -1);
            }
        }
        b.layer = TensorLayout.AFTER_LAYERS;
        b.add("model.norm.weight", Split.REPLICATE, -1, c.hidden());
        if (!c.tiedEmbeddings()) {
            b.add("lm_head.weight", Split.DIM0, -1, c.vocab(), c.hidden());
        }
        return List.copyOf(b.out);
    }

    /**
     * {@code layout} as its FP8 checkpoint has it ({@link Fp8BlockRule}): the tensors the rule
     * selects become block-scaled {@code F8_E4M3}, each followed by its {@code _scale_inv} tensor,
     * which rollout engines shard as its weight (the same split and expert owner).
     *
     * @throws Fp8BlockRule.RuleException when the rule selects a tensor it cannot quantise
     */
    public static List<TensorLayout> blockFp8(List<TensorLayout> layout, Fp8BlockRule rule) {
        List<TensorSpec> specs = rule.apply(layout.stream().map(TensorLayout::spec).toList());
        List<TensorLayout> out = new ArrayList<>(specs.size());
        // apply() keeps the order and puts each scale tensor right after its weight.
        int source = -1;
        for (TensorSpec spec : specs) {
            if (source + 1 < layout.size()
                    && layout.get(source + 1).spec().name().equals(spec.name())) {
                source++;
            }
            TensorLayout of = layout.get(source);
            out.add(of.withSpec(spec));
        }
        return List.copyOf(out);
    }

    private static void gqaAttention(Builder b, ModelConfig c, String p) {
        Attention a = c.attention();
        int q = a.heads() * a.headDim();
        int kv = a.kvHeads() * a.headDim();
        b.add(p + "q_proj.weight", Split.DIM0, -1, q, c.hidden());
        if (a.qkvBias()) {
            b.add(p + "q_proj.bias", Split.DIM0, -1, q);
        }
        b.add(p + "k_proj.weight", Split.KV_HEADS, -1, kv, c.hidden());
        if (a.qkvBias()) {
            b.add(p + "k_proj.bias", Split.KV_HEADS, -1, kv);
        }
        b.add(p + "v_proj.weight", Split.KV_HEADS, -1, kv, c.hidden());
        if (a.qkvBias()) {
            b.add(p + "v_proj.bias", Split.KV_HEADS, -1, kv);
        }
        b.add(p + "o_proj.weight", Split.DIM1, -1, c.hidden(), q);
    }

    private static void mlaAttention(Builder b, ModelConfig c, String p) {
        Mla m = c.mla();
        lowRank(b, c, p + "q", "_a_proj", m.qLoraRank(), 0, m.qkNopeDim() + m.qkRopeDim());
        lowRank(
                b,
                c,
                p + "kv",
                "_a_proj_with_mqa",
                m.kvLoraRank(),
                m.qkRopeDim(),
                m.qkNopeDim() + m.vHeadDim());
        b.add(
                p + "o_proj.weight",
                Split.DIM1,
                -1,
                c.hidden(),
                (long) c.attention().heads() * m.vHeadDim());
    }

    /**
     * One of MLA's low-rank projections: replicated down to {@code rank} (plus {@code passThrough}
     * columns that skip the up projection), normed, then split by head on the way up.
     */
    private static void lowRank(
            Builder b,
            ModelConfig c,
            String prefix,
            String down,
            int rank,
            int passThrough,
            int perHead) {
        b.add(prefix + down + ".weight", Split.REPLICATE, -1, rank + passThrough, c.hidden());
        b.add(prefix + "_a_layernorm.weight", Split.REPLICATE, -1, rank);
        b.add(
                prefix + "_b_proj.weight",
                Split.DIM0,
                -1,
                (long) c.attention().heads() * perHead,
                rank);
    }

    private static void moe(Builder b, ModelConfig c, String p) {
        Moe m = c.moe();
        b.add(p + "gate.weight", Split.REPLICATE, -1, m.experts(), c.hidden());
        b.addTyped(p + "gate.e_score_correction_bias", DType.F32, Split.REPLICATE, -1, m.experts());
        for (int e = 0; e < m.experts(); e++) {
            mlp(b, p + "experts." + e + ".", m.intermediate(), c.hidden(), e);
        }
        if (m.sharedExperts() > 0) {
            mlp(b, p + "shared_experts.", m.intermediate() * m.sharedExperts(), c.hidden(), -1);
        }
    }

    private static void mlp(Builder b, String p, long intermediate, long hidden, int expert) {
        b.add(p + "gate_proj.weight", Split.DIM0, expert, intermediate, hidden);
        b.add(p + "up_proj.weight", Split.DIM0, expert, intermediate, hidden);
        b.add(p + "down_proj.weight", Split.DIM1, expert, hidden, intermediate);
    }

    private static final class Builder {
        private final ModelConfig config;
        private final List<TensorLayout> out = new ArrayList<>();
        private final Map<String, Shape> shapes = new LinkedHashMap<>();

        /** The layer of the tensors added now. */
        int layer = TensorLayout.BEFORE_LAYERS;

        Builder(ModelConfig config) {
            this.config = config;
        }

        void add(String name, Split split, int expert, long... dims) {
            addTyped(name, DType.BF16, split, expert, dims);
        }

        /**
         * A tensor in {@code dtype} on both sides: the catalogued checkpoints are BF16 but for F32
         * biases.
         */
        void addTyped(String name, DType dtype, Split split, int expert, long... dims) {
            // Share one Shape per distinct shape: a trillion-parameter layout has few of them.
            Shape shape =
                    shapes.computeIfAbsent(java.util.Arrays.toString(dims), k -> Shape.of(dims));
            int heads = split == Split.KV_HEADS ? config.attention().kvHeads() : 0;
            out.add(
                    new TensorLayout(
                            new TensorSpec(name, shape, dtype, dtype),
                            split,
                            expert,
                            heads,
                            layer));
        }
    }
}
