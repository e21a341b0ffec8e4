/**
 * The planner benchmark: {@code relay bench planner} builds a catalogued model's manifest, a
 * rollout placement and a topology, plans cold on one thread, and prints one JSON line of metrics.
 */
package io.weightrelay.reshard.bench;
