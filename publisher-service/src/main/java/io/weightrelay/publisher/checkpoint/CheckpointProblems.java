package io.weightrelay.publisher.checkpoint;

import io.weightrelay.service.problem.ProblemCatalog;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;

/** Problem kinds of checkpoint save and restore (statuses and titles: {@link ProblemCatalog}). */
public enum CheckpointProblems implements ProblemKind.Catalogued {
    CHECKPOINT_NOT_FOUND,
    CHECKPOINT_IO_FAILED,
    /** An object's bytes in the segment do not match the checksum registered at publish. */
    CHECKPOINT_CORRUPT,
    /** A save names no registered checksums to prove the bytes against. */
    CHECKSUMS_REQUIRED,
    /** A restore names no objects to re-store. */
    OBJECTS_REQUIRED;

    /** The name callers use for {@link #CHECKPOINT_IO_FAILED}. */
    public static final ProblemKind CHECKPOINT_IO = CHECKPOINT_IO_FAILED;

    /** The save of {@code key} is refused: {@code why}. */
    static RelayException refused(String key, String why) {
        return CHECKPOINT_CORRUPT
                .exception("object " + key + " is not saved: " + why)
                .with("object", key);
    }
}
