package io.weightrelay.reshard.manifest;

import java.util.Objects;

/**
 * An update session: one per generation and rollout group. What control-api keys a session's Redis
 * hash by and what a loader names in every session call (its reports, barriers and landed digests).
 *
 * @param generationId the generation the session rolls out
 * @param group the rollout group moving to it
 */
public record SessionKey(GenerationId generationId, String group) {

    public SessionKey {
        Objects.requireNonNull(generationId, "generationId");
        Objects.requireNonNull(group, "group");
        if (group.isBlank()) {
            throw new IllegalArgumentException("a session's group must not be blank");
        }
    }

    public String model() {
        return generationId.model();
    }

    public long generation() {
        return generationId.generation();
    }

    /** {@code model@g12/group}. */
    @Override
    public String toString() {
        return generationId + "/" + group;
    }
}
