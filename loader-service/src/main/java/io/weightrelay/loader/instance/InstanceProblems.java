package io.weightrelay.loader.instance;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** Problem types of the instance life cycle. */
public final class InstanceProblems {
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

    private InstanceProblems() {}
}
