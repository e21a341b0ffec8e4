package io.weightrelay.control.update;

import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/** The stable problem types of update sessions (statuses and titles: {@link ProblemCatalog}). */
public enum UpdateProblems implements ProblemKind.Catalogued {
    SESSION_NOT_FOUND,
    SESSION_CONFLICT,
    NOT_A_PARTICIPANT,
    EPOCH_FENCED,
    EPOCH_REQUIRED,
    SESSION_CLOSED,
    PHASE_OUT_OF_ORDER,
    /**
     * A session would hold part of a rollout instance that spans nodes: not one loader on each of
     * its nodes. No session is created, so no loader of the group leaves its generation.
     */
    ROLLOUT_INSTANCE_INCOMPLETE
}
