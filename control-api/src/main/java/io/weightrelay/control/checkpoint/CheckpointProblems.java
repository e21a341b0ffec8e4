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

    private CheckpointProblems() {}
}
