package io.weightrelay.loader;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/**
 * Every problem type loader-service answers with, besides the common ones ({@code CommonProblems}):
 * its error contract in one place, grouped by feature. Each type is stable; an engine switches on
 * it.
 */
public final class LoaderProblems {

    // ---- instance life cycle
    // ---------------------------------------------------------------------

    public static final ProblemKind NOT_REGISTERED =
            new ProblemKind(
                    "instance-not-registered", HttpStatus.NOT_FOUND, "No instance is registered");
    public static final ProblemKind INVALID_REGISTRATION =
            new ProblemKind(
                    "invalid-registration",
                    HttpStatus.BAD_REQUEST,
                    "Invalid instance registration");
    public static final ProblemKind NODE_CHANGED =
            new ProblemKind(
                    "node-changed",
                    HttpStatus.CONFLICT,
                    "The loader's data plane already runs with another node label");
    public static final ProblemKind UPDATE_RUNNING =
            new ProblemKind(
                    "update-running", HttpStatus.CONFLICT, "An update is running on this instance");

    // ---- update API
    // ------------------------------------------------------------------------------

    public static final ProblemKind UPDATE_NOT_FOUND =
            new ProblemKind("update-not-found", HttpStatus.NOT_FOUND, "No such update");
    public static final ProblemKind GENERATION_NOT_FOUND =
            new ProblemKind(
                    "generation-not-found",
                    HttpStatus.NOT_FOUND,
                    "No such (or no active) generation");

    private LoaderProblems() {}
}
