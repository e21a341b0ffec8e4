package io.weightrelay.publisher;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/**
 * Every problem type publisher-service answers with, besides the common ones ({@code
 * CommonProblems}): its error contract in one place, grouped by feature. Each type is stable; a
 * trainer switches on it.
 */
public final class PublisherProblems {

    // ---- publishing
    // ------------------------------------------------------------------------------

    public static final ProblemKind GENERATION_NOT_FOUND =
            new ProblemKind("generation-not-found", HttpStatus.NOT_FOUND, "Generation not found");

    /** An earlier batch of this node failed: the generation must be aborted. */
    public static final ProblemKind GENERATION_FAILED =
            new ProblemKind("generation-failed", HttpStatus.CONFLICT, "Generation failed");

    /** This node already finished the generation. */
    public static final ProblemKind GENERATION_FINISHED =
            new ProblemKind("generation-finished", HttpStatus.CONFLICT, "Generation finished");

    /** Finish while a batch of the generation is still being handed over. */
    public static final ProblemKind BATCHES_IN_FLIGHT =
            new ProblemKind("batches-in-flight", HttpStatus.CONFLICT, "Batches in flight");

    /** A batch names a tensor, dtype, shape or byte range the manifest does not have. */
    public static final ProblemKind MANIFEST_MISMATCH =
            new ProblemKind(
                    "manifest-mismatch", HttpStatus.BAD_REQUEST, "Batch does not match manifest");

    public static final ProblemKind UNSUPPORTED_CONVERSION =
            new ProblemKind(
                    "unsupported-conversion", HttpStatus.BAD_REQUEST, "Unsupported conversion");

    /** A fragment of the batch was stored by an earlier batch. */
    public static final ProblemKind ALREADY_STORED =
            new ProblemKind("already-stored", HttpStatus.CONFLICT, "Fragment already stored");

    /** The staged bytes do not have the checksum the rank computed. */
    public static final ProblemKind CHECKSUM_MISMATCH =
            new ProblemKind("checksum-mismatch", HttpStatus.BAD_REQUEST, "Checksum mismatch");

    /** A put failed (no room anywhere, a peer died): nothing of the batch stays stored. */
    public static final ProblemKind STORE_FAILED =
            new ProblemKind("store-failed", HttpStatus.SERVICE_UNAVAILABLE, "Store write failed");

    /** control-api refused or did not answer. */
    public static final ProblemKind CONTROL_API_FAILED =
            new ProblemKind(
                    "control-api-failed",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "control-api refused or unavailable");

    // ---- staging area
    // ----------------------------------------------------------------------------

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

    // ---- checkpoint save and restore
    // -------------------------------------------------------------

    public static final ProblemKind CHECKPOINT_NOT_FOUND =
            new ProblemKind(
                    "checkpoint-not-found", HttpStatus.NOT_FOUND, "No checkpoint of this owner");

    public static final ProblemKind CHECKPOINT_IO =
            new ProblemKind(
                    "checkpoint-io-failed",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "Checkpoint I/O failed");

    /** An object's bytes in the segment do not match the checksum registered at publish. */
    public static final ProblemKind CHECKPOINT_CORRUPT =
            new ProblemKind(
                    "checkpoint-corrupt",
                    HttpStatus.CONFLICT,
                    "Stored bytes do not match their published checksum");

    /** A save names no registered checksums to prove the bytes against. */
    public static final ProblemKind CHECKSUMS_REQUIRED =
            new ProblemKind(
                    "checksums-required",
                    HttpStatus.BAD_REQUEST,
                    "A save needs the published checksums");

    /** A restore names no objects to re-store. */
    public static final ProblemKind OBJECTS_REQUIRED =
            new ProblemKind(
                    "objects-required",
                    HttpStatus.BAD_REQUEST,
                    "A restore names the objects to re-store");

    private PublisherProblems() {}
}
