/**
 * Update sessions: one per (model, generation, rollout group). Loaders report prepared, applied and
 * post-applied with byte counts; the session opens the "all prepared" and "all applied" barriers,
 * ends failed ({@code RESUMED_OLD} before apply, {@code PAUSED_REBUILD} after apply began) with the
 * failing loader named, and fails a phase that outlives its timeout. When every participant said
 * with PREPARED that its engine serves through the fetch, "apply began" means "install began": the
 * install comes after the applied barrier, so a failure before it ends {@code RESUMED_OLD}.
 *
 * <p>Who may start a session and a loader's prepare: {@code UpdateService}, which starts it through
 * {@code SessionStarts} ({@code update-start.lua}). Reports: {@code PhaseReports}, through {@code
 * SessionSteps} ({@code update-step.lua}, the only script that moves a session). Barriers: {@code
 * Barriers}. Reading sessions, the console's recent ones and the landed digests: {@code
 * SessionReads}. The end-to-end checksum proof: {@code UpdateVerifier}.
 */
package io.weightrelay.control.update;
