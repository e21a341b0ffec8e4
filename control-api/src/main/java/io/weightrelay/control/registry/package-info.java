/**
 * Registry of segment owners and loaders. Each registration has a heartbeat TTL kept as a score
 * (expiry, epoch ms) in a sorted set, so "alive" is one range query and a dead owner drops out of
 * the live lists within one TTL of its last heartbeat. {@link
 * io.weightrelay.control.registry.PlacementChecks} holds the layout rules of target placements,
 * checked at registration and again against the manifest when a plan is resolved.
 */
package io.weightrelay.control.registry;
