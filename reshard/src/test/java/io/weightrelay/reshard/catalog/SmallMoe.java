package io.weightrelay.reshard.catalog;

import io.weightrelay.reshard.manifest.Fp8BlockRule;
import java.util.List;

/**
 * A DeepSeek-shaped MoE small enough for byte-level tests (about 4 MB in BF16) whose projections
 * span several 128 x 128 blocks, so block-FP8 tensor parallelism has whole blocks to split at TP 2
 * and cuts blocks at TP 4: 4 heads, hidden 256, 4 routed experts of intermediate 256, one shared.
 */
public final class SmallMoe {
    private SmallMoe() {}

    public static final ModelConfig CONFIG =
            ModelConfig.deepseek(
                    "small-moe", 256, 256, 256, 2, 4, 1, 256, 4, 1, 128, 128, 64, 64, 64);

    /** The model as its block-FP8 checkpoint has it (the default rule). */
    public static List<TensorLayout> blockFp8() {
        return ModelCatalog.blockFp8(ModelCatalog.layout(CONFIG), Fp8BlockRule.defaults());
    }
}
