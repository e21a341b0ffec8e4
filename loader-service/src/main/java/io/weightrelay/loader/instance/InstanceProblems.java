package io.weightrelay.loader.instance;

import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/** Problem types of the instance life cycle (statuses and titles: {@link ProblemCatalog}). */
public enum InstanceProblems implements ProblemKind.Catalogued {
    INSTANCE_NOT_REGISTERED,
    INVALID_REGISTRATION,
    NODE_CHANGED,
    UPDATE_RUNNING;

    /** The name callers use for {@link #INSTANCE_NOT_REGISTERED}. */
    public static final ProblemKind NOT_REGISTERED = INSTANCE_NOT_REGISTERED;
}
