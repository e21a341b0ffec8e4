/**
 * The yardsticks an engine is measured against, in native code on the engine's own memory ({@code
 * ./relay bench dataplane}, the lab's one data-plane bench, runs them).
 */
package io.weightrelay.dataplane.bench;
