/**
 * Routing plans: computed by the reshard planner once per (source digest, target digest, topology
 * digest), exactly once across all instances (a per-instance single flight plus a Redis lock),
 * stored deflated in Redis and served whole or as per-loader slices.
 */
package io.weightrelay.control.plan;
