package io.weightrelay.loader.update;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/** Problem types of the update API (statuses and titles: {@link ProblemCatalog}). */
public enum UpdateProblems implements ProblemKind.Catalogued {
    UPDATE_NOT_FOUND;

    /** No such generation, or no active one; shared with control-api and the publishers. */
    public static final ProblemKind GENERATION_NOT_FOUND = CommonProblems.GENERATION_NOT_FOUND;
}
