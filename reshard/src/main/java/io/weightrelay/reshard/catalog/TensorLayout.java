package io.weightrelay.reshard.catalog;

import io.weightrelay.reshard.manifest.TensorSpec;

/**
 * A tensor of a catalogued model and how rollout engines shard it.
 *
 * @param spec the tensor
 * @param split tensor-parallel split (used for experts only without expert parallelism)
 * @param expert routed-expert index, or -1 for every other tensor
 * @param heads key/value head count of a {@link Split#KV_HEADS} tensor, 0 otherwise
 * @param layer the decoder layer holding it, or {@link #BEFORE_LAYERS} (the embedding) or {@link
 *     #AFTER_LAYERS} (final norm, output head): which pipeline stage holds it
 */
public record TensorLayout(TensorSpec spec, Split split, int expert, int heads, int layer) {

    /** Before the decoder layers: the first pipeline stage holds it. */
    public static final int BEFORE_LAYERS = -1;

    /** After the decoder layers: the last pipeline stage holds it. */
    public static final int AFTER_LAYERS = Integer.MAX_VALUE;

    public TensorLayout {
        if (layer < BEFORE_LAYERS) {
            throw new IllegalArgumentException(
                    "tensor " + spec.name() + ": layer " + layer + " is not a layer");
        }
    }

    /** The same sharding for {@code other} (a tensor as published, say in another dtype). */
    public TensorLayout withSpec(TensorSpec other) {
        return new TensorLayout(other, split, expert, heads, layer);
    }
}
