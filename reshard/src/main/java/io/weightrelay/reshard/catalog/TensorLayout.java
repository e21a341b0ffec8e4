package io.weightrelay.reshard.catalog;

import io.weightrelay.reshard.manifest.TensorSpec;

/**
 * A tensor of a catalogued model and how rollout engines shard it.
 *
 * @param spec the tensor
 * @param split tensor-parallel split (used for experts only without expert parallelism)
 * @param expert routed-expert index, or -1 for every other tensor
 * @param heads key/value head count of a {@link Split#KV_HEADS} tensor, 0 otherwise
 */
public record TensorLayout(TensorSpec spec, Split split, int expert, int heads) {}
