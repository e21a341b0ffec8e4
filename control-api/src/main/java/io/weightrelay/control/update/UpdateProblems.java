package io.weightrelay.control.update;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** The stable problem types of update sessions. */
public final class UpdateProblems {

    public static final ProblemKind SESSION_NOT_FOUND =
            new ProblemKind("session-not-found", HttpStatus.NOT_FOUND, "Unknown update session");
    public static final ProblemKind SESSION_CONFLICT =
            new ProblemKind(
                    "session-conflict",
                    HttpStatus.CONFLICT,
                    "Session exists with other participants");
    public static final ProblemKind NOT_A_PARTICIPANT =
            new ProblemKind(
                    "not-a-participant", HttpStatus.CONFLICT, "Loader is not in the session");
    public static final ProblemKind EPOCH_FENCED =
            new ProblemKind(
                    "epoch-fenced",
                    HttpStatus.CONFLICT,
                    "Report from a stale or foreign loader epoch");
    public static final ProblemKind EPOCH_REQUIRED =
            new ProblemKind(
                    "epoch-required", HttpStatus.BAD_REQUEST, "Report without the loader's epoch");
    public static final ProblemKind SESSION_CLOSED =
            new ProblemKind("session-closed", HttpStatus.CONFLICT, "Session already ended");
    public static final ProblemKind PHASE_OUT_OF_ORDER =
            new ProblemKind(
                    "phase-out-of-order", HttpStatus.CONFLICT, "Phase reported out of order");

    /**
     * A session would hold part of a rollout instance that spans nodes: not one loader on each of
     * its nodes. No session is created, so no loader of the group leaves its generation.
     */
    public static final ProblemKind ROLLOUT_INSTANCE_INCOMPLETE =
            new ProblemKind(
                    "rollout-instance-incomplete",
                    HttpStatus.CONFLICT,
                    "A rollout instance that spans nodes is not whole in the session");

    private UpdateProblems() {}
}
