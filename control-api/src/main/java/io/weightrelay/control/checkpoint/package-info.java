/**
 * Checkpoints: save a committed generation to disk by calling only the segment owners that hold its
 * objects (each writes its own), report per-owner time (mean, worst), and restore a saved
 * generation into the store after a restart.
 */
package io.weightrelay.control.checkpoint;
