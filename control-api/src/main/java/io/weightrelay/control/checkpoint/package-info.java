/**
 * Checkpoints: {@link Checkpoints} saves a committed generation to disk by calling only the segment
 * owners that hold its objects (each writes its own) and restores a saved generation into the store
 * after a restart; {@link CheckpointDirectory} is the directory's format, and {@link
 * CheckpointRecords} what is remembered of each save (per-owner time: mean, worst).
 */
package io.weightrelay.control.checkpoint;
