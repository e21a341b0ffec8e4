package io.weightrelay.reshard.catalog;

/** How tensor parallelism splits a tensor across the ranks of one instance. */
public enum Split {
    /** Every rank holds the whole tensor (norms, routers, low-rank projections). */
    REPLICATE,
    /** Column-parallel: rows (dim 0) split evenly. Also vocabulary-parallel embeddings. */
    DIM0,
    /** Row-parallel: columns (dim 1) split evenly. */
    DIM1,
    /**
     * Key/value heads along dim 0: split when there are at least as many heads as ranks, otherwise
     * each rank holds one whole head, replicated across ranks as vLLM does.
     */
    KV_HEADS
}
