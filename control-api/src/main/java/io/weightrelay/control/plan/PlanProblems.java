package io.weightrelay.control.plan;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** The stable problem types of routing plans. */
public final class PlanProblems {

    public static final ProblemKind PLAN_NOT_FOUND =
            new ProblemKind("plan-not-found", HttpStatus.NOT_FOUND, "Unknown plan");
    public static final ProblemKind SLICE_NOT_FOUND =
            new ProblemKind(
                    "slice-not-found", HttpStatus.NOT_FOUND, "Loader is not part of the plan");
    public static final ProblemKind NO_LIVE_LOADERS =
            new ProblemKind(
                    "no-live-loaders", HttpStatus.CONFLICT, "No live loader in the rollout group");
    public static final ProblemKind PLAN_FAILED =
            new ProblemKind("plan-failed", HttpStatus.CONFLICT, "The planner refused the inputs");
    public static final ProblemKind PLAN_INVALID =
            new ProblemKind("plan-invalid", HttpStatus.CONFLICT, "The plan failed its validation");
    public static final ProblemKind PLAN_BUSY =
            new ProblemKind(
                    "plan-busy",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "Another instance is still computing the plan");

    private PlanProblems() {}
}
