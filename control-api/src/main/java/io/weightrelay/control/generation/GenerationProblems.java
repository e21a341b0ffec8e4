package io.weightrelay.control.generation;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/**
 * The stable problem types of generations, manifests and leases (statuses and titles: {@link
 * ProblemCatalog}).
 */
public enum GenerationProblems implements ProblemKind.Catalogued {
    MODEL_NOT_FOUND,
    NO_ACTIVE_GENERATION,
    MODEL_MISMATCH,
    INVALID_MANIFEST,
    INVALID_TOPOLOGY,
    MANIFEST_TOO_LARGE,
    TRAINER_STEP_CONFLICT,
    GENERATION_NOT_OPEN,
    GENERATION_NOT_COMMITTED,
    UNKNOWN_OBJECT,
    OBJECT_SIZE_MISMATCH,
    OBJECT_CONFLICT,
    GENERATION_INCOMPLETE,
    COMMIT_CONFLICT,
    GENERATION_NOT_LEASABLE,
    GENERATION_LOST,
    MOONCAKE_3187_INEXPRESSIBLE,
    /** A loss reported for a segment in which the generation registered no object. */
    SEGMENT_HOLDS_NO_OBJECTS,
    /** A lease asked for longer than {@code relay.generations.max-lease-ttl}. */
    LEASE_TTL_TOO_LONG,
    /**
     * A checkpoint restore of a generation that exists and is not lost: its objects are stored, so
     * there is nothing to restore (and a failing restore must never remove them).
     */
    GENERATION_EXISTS;

    /** Shared with the publishers and loaders. */
    public static final ProblemKind GENERATION_NOT_FOUND = CommonProblems.GENERATION_NOT_FOUND;
}
