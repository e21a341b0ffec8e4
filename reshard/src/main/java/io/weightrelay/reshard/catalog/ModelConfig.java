package io.weightrelay.reshard.catalog;

import io.weightrelay.reshard.manifest.DType;

/**
 * The published configuration fields a layout needs. Dense models leave the MoE and MLA fields at
 * zero; {@code kvLoraRank > 0} selects DeepSeek-style multi-head latent attention.
 */
public record ModelConfig(
        String name,
        int vocab,
        int hidden,
        int intermediate,
        int layers,
        int heads,
        int kvHeads,
        int headDim,
        boolean tiedEmbeddings,
        boolean qkvBias,
        int firstDenseLayers,
        int moeIntermediate,
        int experts,
        int sharedExperts,
        int qLoraRank,
        int kvLoraRank,
        int qkNopeDim,
        int qkRopeDim,
        int vHeadDim,
        DType trainerDtype,
        DType rolloutDtype) {

    public boolean moe() {
        return experts > 0;
    }

    public boolean mla() {
        return kvLoraRank > 0;
    }

    static ModelConfig dense(
            String name,
            int vocab,
            int hidden,
            int intermediate,
            int layers,
            int heads,
            int kvHeads,
            int headDim,
            boolean tied,
            boolean qkvBias) {
        return new ModelConfig(
                name,
                vocab,
                hidden,
                intermediate,
                layers,
                heads,
                kvHeads,
                headDim,
                tied,
                qkvBias,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                DType.BF16,
                DType.BF16);
    }

    static ModelConfig deepseek(
            String name,
            int vocab,
            int hidden,
            int intermediate,
            int layers,
            int heads,
            int firstDense,
            int moeIntermediate,
            int experts,
            int shared,
            int qLora,
            int kvLora,
            int nope,
            int rope,
            int vHead) {
        return new ModelConfig(
                name,
                vocab,
                hidden,
                intermediate,
                layers,
                heads,
                heads,
                nope + rope,
                false,
                false,
                firstDense,
                moeIntermediate,
                experts,
                shared,
                qLora,
                kvLora,
                nope,
                rope,
                vHead,
                DType.BF16,
                DType.BF16);
    }
}
