/**
 * The simulated rollout engine ({@code ./relay rollout ...}): registers each instance's workers and
 * receive buffers with its loader-service, triggers updates after "draining", follows their
 * progress, maps the buffers' shared memory and checks every received byte against the
 * deterministic contents of the generation.
 */
package io.weightrelay.lab.rollout;
