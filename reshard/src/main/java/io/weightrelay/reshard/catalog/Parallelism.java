package io.weightrelay.reshard.catalog;

/**
 * How one rollout instance shards the model over its ranks, in SGLang's terms.
 *
 * <p>{@code tp} is the instance's rank count (SGLang's {@code --tp-size}, its world size; an
 * instance with more ranks than a node has GPUs spans several nodes). Routed experts are split into
 * {@code ep} groups of {@code experts / ep} whole experts (SGLang's {@code --ep-size}): rank {@code
 * r} belongs to expert group {@code r / (tp / ep)} and splits that group's experts tensor-parallel
 * with the {@code tp / ep} ranks beside it, so {@code ep == tp} holds every expert whole on one
 * rank and {@code ep == 1} splits every expert over all ranks.
 *
 * <p>{@code dpAttention} is SGLang's wide-EP deployment, {@code --enable-dp-attention --dp-size tp
 * --moe-dense-tp-size 1 --enable-dp-lm-head} with an all-to-all MoE backend (DeepEP), which runs
 * the shared experts without tensor parallelism: every rank is its own data-parallel attention rank
 * and holds every weight that is not a routed expert whole (attention, dense MLPs, shared experts,
 * embeddings, the output head, norms and routers). Without it those are split over all {@code tp}
 * ranks.
 *
 * <p>{@code pp} pipeline stages (SGLang's {@code --pp-size}) each hold a contiguous run of the
 * decoder layers, as even as the count allows (stage {@code s} of {@code pp} holds layers {@code s
 * * L / pp} up to {@code (s + 1) * L / pp}), the embedding going with the first stage and the final
 * norm and output head with the last; inside a stage, {@code tp}, {@code ep} and {@code
 * dpAttention} shard as above. An instance has {@code tp * pp} ranks, stage by stage.
 *
 * @param tp ranks per pipeline stage (all the instance's ranks when {@code pp} is 1)
 * @param ep expert-parallel groups; divides {@code tp}
 * @param dpAttention every non-expert weight whole on every rank
 * @param pp pipeline stages
 */
public record Parallelism(int tp, int ep, boolean dpAttention, int pp) {
    public Parallelism {
        if (tp < 1 || ep < 1 || pp < 1) {
            throw new IllegalArgumentException(
                    "tp, ep and pp must be positive, got tp "
                            + tp
                            + ", ep "
                            + ep
                            + " and pp "
                            + pp);
        }
        if (tp % ep != 0) {
            throw new IllegalArgumentException(
                    "ep "
                            + ep
                            + " must divide tp "
                            + tp
                            + " (the instance's ranks: each expert group spans tp / ep ranks)");
        }
    }

    /** One pipeline stage. */
    public Parallelism(int tp, int ep, boolean dpAttention) {
        this(tp, ep, dpAttention, 1);
    }

    /** Ranks of one instance: {@code tp} per stage. */
    public int ranks() {
        return Math.multiplyExact(tp, pp);
    }

    /**
     * The stage that holds decoder layer {@code layer} of {@code layers} ({@link
     * TensorLayout#BEFORE_LAYERS}: the first, {@link TensorLayout#AFTER_LAYERS}: the last).
     */
    public int stageOf(int layer, int layers) {
        if (layer == TensorLayout.BEFORE_LAYERS) {
            return 0;
        }
        if (layer == TensorLayout.AFTER_LAYERS) {
            return pp - 1;
        }
        // the last stage s whose first layer, s * layers / pp, is at or before this one
        int stage = pp - 1;
        while (stage > 0 && (long) stage * layers / pp > layer) {
            stage--;
        }
        return stage;
    }

    /** Tensor parallelism inside one expert group. */
    public int expertTp() {
        return tp / ep;
    }
}
