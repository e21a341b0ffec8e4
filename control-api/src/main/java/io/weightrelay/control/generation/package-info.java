/**
 * Generations of a model: open (idempotent by trainer step), register stored objects in batches,
 * commit in one atomic Redis step, abort, leases and garbage collection of retired and aborted
 * generations with their store objects, and the long-poll that tells loaders a new generation is
 * active.
 */
package io.weightrelay.control.generation;
