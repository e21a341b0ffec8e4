/**
 * {@code ./relay bench publish}: the publish path end to end, against memcpy on the same machine.
 */
package io.weightrelay.trainer.bench;
