/**
 * The source manifest: tensors (name, shape, trainer and rollout dtype), the stored fragments that
 * hold them, the fragmenting rule publishers use, store keys, and the safetensors image layout that
 * compatibility-mode receive buffers follow.
 */
package io.weightrelay.reshard.manifest;
