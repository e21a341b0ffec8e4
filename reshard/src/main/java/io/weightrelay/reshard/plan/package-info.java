/**
 * The routing plan: disjoint read ranges of stored objects, one reader each, the one-sided writes
 * that carry the bytes to every consumer (byte runs with outer loops), byte-bounded batches, the
 * per-loader slices, and the validation loaders run at prepare.
 */
package io.weightrelay.reshard.plan;
