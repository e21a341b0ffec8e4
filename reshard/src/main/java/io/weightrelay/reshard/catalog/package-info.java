/**
 * Realistic model layouts built from each model's published configuration (tensor names and shapes
 * as the Hugging Face checkpoints name them), with the tensor-parallel split of every tensor and
 * the expert-parallel owner of every expert, and the target placements a rollout deployment of them
 * registers.
 */
package io.weightrelay.reshard.catalog;
