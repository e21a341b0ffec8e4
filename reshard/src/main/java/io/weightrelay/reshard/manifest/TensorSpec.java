package io.weightrelay.reshard.manifest;

import java.util.Objects;

/**
 * One tensor of the model as the trainer produces it and the rollout side consumes it.
 *
 * @param name parameter name, unique within a manifest
 * @param shape logical shape
 * @param trainerDtype dtype the trainer holds
 * @param rolloutDtype dtype the publisher converts to and stores
 */
public record TensorSpec(String name, Shape shape, DType trainerDtype, DType rolloutDtype) {
    public TensorSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(trainerDtype, "trainerDtype");
        Objects.requireNonNull(rolloutDtype, "rolloutDtype");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("empty tensor name");
        }
    }

    /** Stored bytes, in the rollout dtype. */
    public long bytes() {
        return Math.multiplyExact(shape.numel(), rolloutDtype.bytes());
    }
}
