/**
 * Publishing a generation on this node: hand-over of staged batches, conversion to the rollout
 * dtype, one pinned store copy per fragment in the own segment, registration with control-api in
 * chunks while the batch is stored, and the per-generation state and byte counters. A failed batch
 * fails the node's part of the generation: its objects are removed and finish answers 409, so the
 * trainer aborts and the previous generation stays active.
 */
package io.weightrelay.publisher.publish;
