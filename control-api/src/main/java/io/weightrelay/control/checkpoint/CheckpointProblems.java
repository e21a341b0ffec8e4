package io.weightrelay.control.checkpoint;

import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;

/** The stable problem types of checkpoints (statuses and titles: {@link ProblemCatalog}). */
public enum CheckpointProblems implements ProblemKind.Catalogued {
    OBJECTS_NOT_STORED,
    /** An owner failed or could not be reached: no completion marker was written. */
    CHECKPOINT_FAILED,
    /** A restore's owners could not re-store every object: nothing was registered. */
    RESTORE_FAILED,
    /**
     * The directory holds no complete checkpoint (no marker, or a manifest it does not vouch for).
     */
    CHECKPOINT_INCOMPLETE,
    /** No live segment owner with an admin URL to restore into. */
    NO_SEGMENT_OWNERS,
    /**
     * No checkpoint root is configured, or the directory is outside it, names {@code ..}, or passes
     * through a symbolic link.
     */
    CHECKPOINT_DIRECTORY_REFUSED;

    /** The name callers use for {@link #NO_SEGMENT_OWNERS}. */
    public static final ProblemKind NO_OWNERS = NO_SEGMENT_OWNERS;
}
