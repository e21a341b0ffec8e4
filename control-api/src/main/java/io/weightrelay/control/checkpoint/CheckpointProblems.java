package io.weightrelay.control.checkpoint;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** The stable problem types of checkpoints. */
public final class CheckpointProblems {

    public static final ProblemKind OBJECTS_NOT_STORED =
            new ProblemKind(
                    "objects-not-stored",
                    HttpStatus.CONFLICT,
                    "Some objects of the generation are not in the store");

    /** An owner failed or could not be reached: no completion marker was written. */
    public static final ProblemKind CHECKPOINT_FAILED =
            new ProblemKind(
                    "checkpoint-failed",
                    HttpStatus.CONFLICT,
                    "The checkpoint save failed; it has no completion marker");

    /** A restore's owners could not re-store every object: nothing was registered. */
    public static final ProblemKind RESTORE_FAILED =
            new ProblemKind(
                    "restore-failed",
                    HttpStatus.CONFLICT,
                    "The checkpoint restore failed; nothing was registered");

    /**
     * The directory holds no complete checkpoint (no marker, or a manifest it does not vouch for).
     */
    public static final ProblemKind CHECKPOINT_INCOMPLETE =
            new ProblemKind(
                    "checkpoint-incomplete",
                    HttpStatus.CONFLICT,
                    "The directory holds no complete checkpoint");

    /** No live segment owner with an admin URL to restore into. */
    public static final ProblemKind NO_OWNERS =
            new ProblemKind(
                    "no-segment-owners",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "No live segment owner can take the restored objects");

    private CheckpointProblems() {}
}
