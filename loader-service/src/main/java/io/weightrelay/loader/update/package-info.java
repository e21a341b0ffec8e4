/**
 * The update state machine: prepare (fetch and validate the plan, check fences and objects,
 * register provisionally, all-prepared barrier) -> apply (the pipeline, all-applied barrier) ->
 * post-apply (promote registrations, advance the generation). A failure before apply resumes the
 * old generation; one after apply began pauses the instance for a rebuild; nothing is retried in
 * place, and every outcome names the failing peer or object.
 *
 * <p>{@code UpdateCoordinator} runs the phases in turn; {@code PrepareInputs} makes the prepare
 * call and fetches what changed since the last update; {@code GroupSession} reports and waits at
 * the group's barriers; {@code PostAppliedReport} sends POST_APPLIED until control-api answers;
 * {@code UpdateSteps} is the work on the data plane.
 */
package io.weightrelay.loader.update;
