package io.weightrelay.publisher.checkpoint;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** Problem kinds of checkpoint save and restore. */
public final class CheckpointProblems {

    public static final ProblemKind CHECKPOINT_NOT_FOUND =
            new ProblemKind(
                    "checkpoint-not-found", HttpStatus.NOT_FOUND, "No checkpoint of this owner");

    public static final ProblemKind CHECKPOINT_IO =
            new ProblemKind(
                    "checkpoint-io-failed",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "Checkpoint I/O failed");

    private CheckpointProblems() {}
}
