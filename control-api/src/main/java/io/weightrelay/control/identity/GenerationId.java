package io.weightrelay.control.identity;

import io.weightrelay.reshard.manifest.ObjectKeys;
import java.util.Objects;

/**
 * One generation of one model: what every per-generation Redis key, store key and problem names.
 * The id is the model's sequence number, so it starts at 1 (the REST contract refuses anything
 * lower before a controller builds one).
 *
 * @param model the model's name
 * @param generation the generation's id within the model, at least 1
 */
public record GenerationId(String model, long generation) {

    public GenerationId {
        Objects.requireNonNull(model, "model");
        if (model.isBlank()) {
            throw new IllegalArgumentException("a generation's model must not be blank");
        }
        if (generation < 1) {
            throw new IllegalArgumentException(
                    "generation ids start at 1, not " + generation + " (model " + model + ")");
        }
    }

    /** The store key of one of this generation's fragments: {@code model/generation/fragment}. */
    public String objectKey(String fragment) {
        return ObjectKeys.key(model, generation, fragment);
    }

    /** The update session of this generation in a rollout group. */
    public SessionKey session(String group) {
        return new SessionKey(this, group);
    }

    /** {@code model@g12}: short enough for a log line, unambiguous in one. */
    @Override
    public String toString() {
        return model + "@g" + generation;
    }
}
