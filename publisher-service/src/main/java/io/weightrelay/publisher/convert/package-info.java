/**
 * Element conversion from the trainer dtype to the rollout dtype (fp32 to bf16 and fp16 with
 * round-to-nearest-even and NaN preserved, pass-through for equal dtypes; fp32, bf16 and fp16 to
 * block-scaled FP8 E4M3 in reshard's {@link io.weightrelay.reshard.convert.BlockFp8}) and CRC32C
 * checksums, fused into the conversion's passes over the bytes.
 */
package io.weightrelay.publisher.convert;
