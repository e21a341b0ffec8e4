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
 * @param tp ranks per instance
 * @param ep expert-parallel groups; divides {@code tp}
 * @param dpAttention every non-expert weight whole on every rank
 */
public record Parallelism(int tp, int ep, boolean dpAttention) {
    public Parallelism {
        if (tp < 1 || ep < 1) {
            throw new IllegalArgumentException(
                    "tp and ep must be positive, got tp " + tp + " and ep " + ep);
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

    /** Tensor parallelism inside one expert group. */
    public int expertTp() {
        return tp / ep;
    }
}
