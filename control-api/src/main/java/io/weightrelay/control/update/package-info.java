/**
 * Update sessions: one per (model, generation, rollout group). Loaders report prepared, applied and
 * post-applied with byte counts; the session opens the "all prepared" and "all applied" barriers,
 * ends failed ({@code RESUMED_OLD} before apply, {@code PAUSED_REBUILD} after apply began) with the
 * failing loader named, and fails a phase that outlives its timeout.
 */
package io.weightrelay.control.update;
