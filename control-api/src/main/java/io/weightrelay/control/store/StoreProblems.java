package io.weightrelay.control.store;

import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/**
 * Problem kinds of the object store and of the state store, Redis (statuses and titles: {@link
 * ProblemCatalog}).
 */
public enum StoreProblems implements ProblemKind.Catalogued {
    STORE_UNAVAILABLE,
    /** Redis did not answer, or its circuit breaker is open. */
    REDIS_UNAVAILABLE
}
