package io.weightrelay.control.plan;

import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/** The stable problem types of routing plans (statuses and titles: {@link ProblemCatalog}). */
public enum PlanProblems implements ProblemKind.Catalogued {
    PLAN_NOT_FOUND,
    SLICE_NOT_FOUND,
    NO_LIVE_LOADERS,
    PLAN_FAILED,
    PLAN_INVALID,
    PLAN_BUSY
}
