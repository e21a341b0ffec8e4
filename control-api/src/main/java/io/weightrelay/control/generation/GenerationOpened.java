package io.weightrelay.control.generation;

import io.weightrelay.reshard.manifest.GenerationId;

/**
 * Published (as a Spring application event, on the opening thread) once a generation is created:
 * its manifest and trainer topology are known, while the trainers are only starting to store its
 * bytes. What depends on those alone, such as the rollout groups' plans, can be made ready during
 * the publish instead of after the commit.
 */
public record GenerationOpened(GenerationId id) {}
