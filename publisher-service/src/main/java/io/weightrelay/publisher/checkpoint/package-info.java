/**
 * Segment-owner duties of a checkpoint: write the objects of a generation that this segment holds
 * to disk (straight from the segment, no staging copy) and put them back after a full restart. Only
 * segment owners are called, so a save never waits on a busy GPU process.
 */
package io.weightrelay.publisher.checkpoint;
