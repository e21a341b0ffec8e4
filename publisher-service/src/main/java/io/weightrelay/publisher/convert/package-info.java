/**
 * Element conversion from the trainer dtype to the rollout dtype (fp32 to bf16 and fp16 with
 * round-to-nearest-even and NaN preserved, pass-through for equal dtypes) and CRC32C checksums,
 * fused into one pass over each chunk while it is in cache.
 */
package io.weightrelay.publisher.convert;
