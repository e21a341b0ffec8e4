package io.weightrelay.loader.update;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** Problem types of the update API. */
public final class UpdateProblems {
    public static final ProblemKind UPDATE_NOT_FOUND =
            new ProblemKind("update-not-found", HttpStatus.NOT_FOUND, "No such update");
    public static final ProblemKind GENERATION_NOT_FOUND =
            new ProblemKind(
                    "generation-not-found",
                    HttpStatus.NOT_FOUND,
                    "No such (or no active) generation");

    private UpdateProblems() {}
}
