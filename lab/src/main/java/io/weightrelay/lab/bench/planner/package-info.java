/**
 * The planner benchmark: {@code relay bench planner} builds a catalogued model's manifest, a
 * rollout placement and a topology, plans cold on one thread, and prints one JSON line of metrics;
 * {@link io.weightrelay.lab.bench.planner.ClusterModel} predicts how long the plan's update takes
 * on full-duplex NICs, and the lower bound no plan can beat.
 */
package io.weightrelay.lab.bench.planner;
