/**
 * Element conversions both sides of an update must agree on bit for bit: the publisher converts
 * with them, and whoever checks what a rollout worker received computes its expectation with the
 * same code. {@link io.weightrelay.reshard.convert.Floats} holds the scalar casts (bf16, fp16 and
 * E4M3, round to nearest even), {@link io.weightrelay.reshard.convert.BlockFp8} the block-scaled
 * FP8 of 128 x 128 blocks.
 */
package io.weightrelay.reshard.convert;
