package io.weightrelay.publisher.checkpoint;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** Problem kinds of checkpoint save and restore. */
public final class CheckpointProblems {

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

    /** The save of {@code key} is refused: {@code why}. */
    static io.weightrelay.service.problem.RelayException refused(String key, String why) {
        return CHECKPOINT_CORRUPT
                .exception("object " + key + " is not saved: " + why)
                .with("object", key);
    }

    private CheckpointProblems() {}
}
