package io.weightrelay.control.registry;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** The stable problem types of the registry. */
public final class RegistryProblems {

    public static final ProblemKind SEGMENT_NOT_FOUND =
            new ProblemKind("segment-not-found", HttpStatus.NOT_FOUND, "Unknown segment");
    public static final ProblemKind LOADER_NOT_FOUND =
            new ProblemKind("loader-not-found", HttpStatus.NOT_FOUND, "Unknown loader");
    public static final ProblemKind INVALID_PLACEMENT =
            new ProblemKind(
                    "invalid-placement", HttpStatus.BAD_REQUEST, "Invalid worker placement");

    private RegistryProblems() {}
}
