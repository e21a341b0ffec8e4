package io.weightrelay.publisher.staging;

import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/** Problem kinds of the staging area (statuses and titles: {@link ProblemCatalog}). */
public enum StagingProblems implements ProblemKind.Catalogued {
    /** No contiguous room right now: retry after {@code Retry-After}. */
    STAGING_FULL,
    /** A reservation larger than one batch may be. */
    BATCH_TOO_LARGE,
    /** The reservation does not exist (never made, released, or reclaimed after its timeout). */
    RESERVATION_NOT_FOUND,
    /** The reservation is being handed over by another call. */
    RESERVATION_BUSY,
    /** A storage unit owns store memory for others and serves no trainer rank. */
    STORAGE_UNIT_SERVES_NO_TRAINER;

    /** The name callers use for {@link #STORAGE_UNIT_SERVES_NO_TRAINER}. */
    public static final ProblemKind SERVES_NO_TRAINER = STORAGE_UNIT_SERVES_NO_TRAINER;
}
