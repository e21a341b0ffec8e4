/**
 * The lab's simulated trainer ({@code ./relay trainer}): trainer-client's publish protocol driven
 * with {@code testkit.sim}'s deterministic model on any number of trainer nodes.
 */
package io.weightrelay.lab.trainer;
