package io.weightrelay.reshard.catalog;

/**
 * The published {@code config.json} fields a layout needs, grouped as they read: the trunk, the
 * attention, and the optional mixture of experts and multi-head latent attention. Catalogued
 * checkpoints hold every weight in BF16 (FP8 serving is {@link ModelCatalog#blockFp8}'s).
 *
 * @param intermediate the dense MLP's intermediate size (every layer of a dense model, the first
 *     {@link Moe#firstDenseLayers} of a MoE model)
 * @param moe the routed experts; {@link Moe#NONE} for a dense model
 * @param mla DeepSeek-style multi-head latent attention; {@link Mla#NONE} for grouped-query
 *     attention
 */
public record ModelConfig(
        String name,
        int vocab,
        int hidden,
        int intermediate,
        int layers,
        boolean tiedEmbeddings,
        Attention attention,
        Moe moe,
        Mla mla) {

    /** The attention heads: {@code kvHeads} share keys and values (grouped-query attention). */
    public record Attention(int heads, int kvHeads, int headDim, boolean qkvBias) {}

    /**
     * The routed experts of the layers from {@code firstDenseLayers} on, each an MLP of {@code
     * intermediate}, plus {@code sharedExperts} always-on ones.
     */
    public record Moe(int firstDenseLayers, int intermediate, int experts, int sharedExperts) {
        public static final Moe NONE = new Moe(0, 0, 0, 0);

        /** The same layers with {@code count} routed experts. */
        public Moe withExperts(int count) {
            return new Moe(firstDenseLayers, intermediate, count, sharedExperts);
        }
    }

    /** Low-rank query and key-value projections, with the head dims they split into. */
    public record Mla(int qLoraRank, int kvLoraRank, int qkNopeDim, int qkRopeDim, int vHeadDim) {
        public static final Mla NONE = new Mla(0, 0, 0, 0, 0);
    }

    public boolean isMoe() {
        return moe.experts() > 0;
    }

    public boolean isMla() {
        return mla.kvLoraRank() > 0;
    }

    /** A dense model with grouped-query attention. */
    static ModelConfig dense(
            String name,
            int vocab,
            int hidden,
            int intermediate,
            int layers,
            boolean tied,
            Attention attention) {
        return new ModelConfig(
                name, vocab, hidden, intermediate, layers, tied, attention, Moe.NONE, Mla.NONE);
    }

    /**
     * A DeepSeek-style model: MoE with MLA, whose {@code heads} attend with the MLA's query-key
     * dims and no bias.
     */
    static ModelConfig deepseek(
            String name,
            int vocab,
            int hidden,
            int intermediate,
            int layers,
            int heads,
            Moe moe,
            Mla mla) {
        Attention attention = new Attention(heads, heads, mla.qkNopeDim() + mla.qkRopeDim(), false);
        return new ModelConfig(
                name, vocab, hidden, intermediate, layers, false, attention, moe, mla);
    }
}
