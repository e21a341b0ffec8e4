package io.weightrelay.control.generation;

import io.weightrelay.reshard.manifest.GenerationId;

/**
 * Published (as a Spring application event, on the committing thread) once a generation is
 * committed and active: what depends only on the committed generation can be made ready before the
 * first loader asks for it.
 */
public record GenerationCommitted(GenerationId id) {}
