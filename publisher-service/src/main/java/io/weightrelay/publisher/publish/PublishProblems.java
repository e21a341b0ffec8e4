package io.weightrelay.publisher.publish;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** Problem kinds of publishing; each has a stable type a trainer can switch on. */
public final class PublishProblems {

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

    private PublishProblems() {}
}
