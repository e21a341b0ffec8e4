/**
 * The simulated trainer's model (test support, published in trainer-client's test-jar): a
 * catalogued model's manifest ({@link io.weightrelay.trainer.sim.SimulatedModel}) with
 * deterministic contents ({@link io.weightrelay.trainer.sim.DeterministicWeights}: seed and
 * generation decide every byte). The lab's {@code ./relay trainer} publishes it through the real
 * protocol ({@code io.weightrelay.lab.trainer.SimulatedTrainer}); the publisher's tests check it.
 */
package io.weightrelay.trainer.sim;
