/**
 * The lab's simulated trainer ({@code ./relay trainer}): trainer-client's publish protocol driven
 * with {@code trainer.sim}'s deterministic model on any number of trainer nodes.
 */
package io.weightrelay.lab.trainer;
