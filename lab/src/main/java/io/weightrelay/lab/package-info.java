/**
 * The lab: the {@code ./relay} launcher, the demo, the simulated rollout engine and the end-to-end
 * benchmarks. Nothing here is used by the services themselves.
 */
package io.weightrelay.lab;
