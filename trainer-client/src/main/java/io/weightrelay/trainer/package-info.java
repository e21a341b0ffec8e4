/**
 * The trainer side of weight-relay: the publish protocol library, the simulated trainer, the bench.
 */
package io.weightrelay.trainer;
