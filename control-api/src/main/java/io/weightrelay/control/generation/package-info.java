/**
 * Generations of a model, one class per concern: {@link GenerationLifecycle} (open, idempotent by
 * trainer step; register stored objects in batches; commit in one atomic Redis step; abort; lose),
 * {@link GenerationQueries} (reads, and the long-poll that tells loaders a new generation is
 * active), {@link ManifestStore} (manifests stored once per digest, in every form served), {@link
 * Leases}, {@link GenerationGc} (garbage collection of retired and aborted generations with their
 * store objects) and {@link GenerationRestore} (a generation back from a checkpoint).
 */
package io.weightrelay.control.generation;
