/** {@code ./relay bench update}: the rollout-side update benchmark, services as child JVMs. */
package io.weightrelay.lab.bench;
