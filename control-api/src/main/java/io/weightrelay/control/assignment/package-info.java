/**
 * Publisher assignment (tensor to trainer node, byte-balanced) from the reshard planner, cached in
 * Redis by (manifest digest, trainer topology digest).
 */
package io.weightrelay.control.assignment;
