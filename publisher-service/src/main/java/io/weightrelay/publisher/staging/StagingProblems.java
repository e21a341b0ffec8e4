package io.weightrelay.publisher.staging;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** Problem kinds of the staging area. */
public final class StagingProblems {

    /** No contiguous room right now: retry after {@code Retry-After}. */
    public static final ProblemKind STAGING_FULL =
            new ProblemKind("staging-full", HttpStatus.TOO_MANY_REQUESTS, "Staging area full");

    /** A reservation larger than one batch may be. */
    public static final ProblemKind BATCH_TOO_LARGE =
            new ProblemKind("batch-too-large", HttpStatus.BAD_REQUEST, "Batch too large");

    /** The reservation does not exist (never made, released, or reclaimed after its timeout). */
    public static final ProblemKind RESERVATION_NOT_FOUND =
            new ProblemKind("reservation-not-found", HttpStatus.NOT_FOUND, "Reservation not found");

    /** The reservation is being handed over by another call. */
    public static final ProblemKind RESERVATION_BUSY =
            new ProblemKind("reservation-busy", HttpStatus.CONFLICT, "Reservation in use");

    /** A storage unit owns store memory for others and serves no trainer rank. */
    public static final ProblemKind SERVES_NO_TRAINER =
            new ProblemKind(
                    "storage-unit-serves-no-trainer",
                    HttpStatus.CONFLICT,
                    "A storage unit serves no trainer");

    private StagingProblems() {}
}
