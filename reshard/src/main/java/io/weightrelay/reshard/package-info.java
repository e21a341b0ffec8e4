/**
 * Contracts and the routing planner of weight-relay: source manifests, target placements,
 * topologies, the publisher assignment, the routing plan with its per-loader slices, the model
 * catalog and the cluster time model. Everything here is pure and deterministic.
 */
package io.weightrelay.reshard;
