package io.weightrelay.publisher.publish;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/**
 * Problem kinds of publishing; each has a stable type a trainer can switch on (statuses and titles:
 * {@link ProblemCatalog}).
 */
public enum PublishProblems implements ProblemKind.Catalogued {
    /** An earlier batch of this node failed: the generation must be aborted. */
    GENERATION_FAILED,
    /** This node already finished the generation. */
    GENERATION_FINISHED,
    /** Finish while a batch of the generation is still being handed over. */
    BATCHES_IN_FLIGHT,
    /** A batch names a tensor, dtype, shape or byte range the manifest does not have. */
    MANIFEST_MISMATCH,
    UNSUPPORTED_CONVERSION,
    /** A fragment of the batch was stored by an earlier batch. */
    ALREADY_STORED,
    /** The staged bytes do not have the checksum the rank computed. */
    CHECKSUM_MISMATCH,
    /** A staged tensor came without its CRC32C (or with another algorithm's checksum). */
    TENSOR_CHECKSUM_REQUIRED,
    /** A put failed (no room anywhere, a peer died): nothing of the batch stays stored. */
    STORE_FAILED,
    /** control-api refused or did not answer. */
    CONTROL_API_FAILED;

    /** Shared with control-api and the loaders. */
    public static final ProblemKind GENERATION_NOT_FOUND = CommonProblems.GENERATION_NOT_FOUND;
}
