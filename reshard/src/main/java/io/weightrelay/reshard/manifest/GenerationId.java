package io.weightrelay.reshard.manifest;

import java.util.Objects;

/**
 * One generation of one model: what every per-generation Redis key, store key and problem names, in
 * every service and client (control-api, publishers, loaders, the trainer client). The id is the
 * model's sequence number, so it starts at 1 (the REST contract refuses anything lower before a
 * controller builds one). It lives beside {@link ObjectKeys} because the store key is where the two
 * halves meet.
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

    /**
     * The generation as its objects' keys begin and the REST paths name it: {@code model/12}.
     *
     * @see #ofPath(String)
     */
    public String path() {
        return model + "/" + generation;
    }

    /**
     * The generation a {@link #path()} names; model names may hold slashes, the last one splits.
     *
     * @throws IllegalArgumentException naming the text when it is no such path
     */
    public static GenerationId ofPath(String path) {
        int slash = path.lastIndexOf('/');
        try {
            return new GenerationId(
                    path.substring(0, Math.max(slash, 0)),
                    Long.parseLong(path.substring(slash + 1)));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    "'" + path + "' is not a generation's model/generation path", e);
        }
    }

    /** The store key of one of this generation's fragments: {@code model/generation/fragment}. */
    public String objectKey(String fragment) {
        return ObjectKeys.key(this, fragment);
    }

    /** {@code model@g12}: short enough for a log line, unambiguous in one. */
    @Override
    public String toString() {
        return model + "@g" + generation;
    }
}
