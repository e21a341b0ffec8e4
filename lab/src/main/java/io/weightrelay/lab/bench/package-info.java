/**
 * The end-to-end benchmarks, {@code ./relay bench publish} and {@code ./relay bench update}: the
 * real services as child JVMs on loopback, the simulated trainer and rollout engines in this JVM.
 */
package io.weightrelay.lab.bench;
