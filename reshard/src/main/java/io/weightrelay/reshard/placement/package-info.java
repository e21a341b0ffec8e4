/**
 * The target placement: the union of every loader's registration. Workers with their instance,
 * node, NICs and mode; parameter-direct workers list the exact N-D fragments they hold and where
 * each lands (buffer, offset, byte strides); compatibility workers receive every tensor whole as a
 * safetensors image.
 */
package io.weightrelay.reshard.placement;
