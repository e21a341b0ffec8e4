/**
 * The simulated trainer of the lab: a catalogued model with deterministic contents (seed and
 * generation decide every byte), published through the real protocol on any number of trainer
 * nodes.
 */
package io.weightrelay.trainer.sim;
