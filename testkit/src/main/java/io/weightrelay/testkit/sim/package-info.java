/**
 * The simulated trainer's model (shared by the tests and the lab): a catalogued model's manifest
 * ({@link io.weightrelay.testkit.sim.SimulatedModel}) with deterministic contents ({@link
 * io.weightrelay.testkit.sim.DeterministicWeights}: seed and generation decide every byte). The
 * lab's {@code ./relay trainer} publishes it through the real protocol ({@code
 * io.weightrelay.lab.trainer.SimulatedTrainer}); the publisher's tests check it.
 */
package io.weightrelay.testkit.sim;
