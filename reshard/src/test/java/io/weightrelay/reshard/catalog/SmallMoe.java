package io.weightrelay.reshard.catalog;

import io.weightrelay.reshard.manifest.Fp8BlockRule;
import java.util.List;

/**
 * The catalog's {@code small-moe}, small enough for byte-level tests (about 4 MB in BF16), whose
 * projections span several 128 x 128 blocks, so block-FP8 tensor parallelism has whole blocks to
 * split at TP 2 and cuts blocks at TP 4.
 */
public final class SmallMoe {
    private SmallMoe() {}

    public static final ModelConfig CONFIG = ModelCatalog.config("small-moe");

    /** The model as its block-FP8 checkpoint has it (the default rule). */
    public static List<TensorLayout> blockFp8() {
        return ModelCatalog.blockFp8(ModelCatalog.layout(CONFIG), Fp8BlockRule.defaults());
    }
}
