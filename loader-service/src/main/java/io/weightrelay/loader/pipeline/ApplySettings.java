package io.weightrelay.loader.pipeline;

import java.util.Objects;

/**
 * How an apply runs, the same for every update of this loader.
 *
 * @param slots staging watermark in batches (at least 2: batch {@code k+1} is read while batch
 *     {@code k} is pushed)
 * @param hook called before each pushed batch (failure injection in the lab)
 * @param readThreads store reads of one batch in flight at once
 * @param checksums checksum every range read, for control-api's proof, and every write this loader
 *     makes, for its receivers' proof of their buffers (off only to measure what it costs)
 * @param readFault called after each object's read (failure injection in the lab)
 * @param landedFault called before this loader proves what landed in its workers' buffers (failure
 *     injection in the lab)
 */
public record ApplySettings(
        int slots,
        BatchHook hook,
        int readThreads,
        boolean checksums,
        ReadFault readFault,
        LandedFault landedFault) {
    public ApplySettings {
        if (slots < 2) {
            throw new IllegalArgumentException("the staging watermark must admit >= 2 batches");
        }
        if (readThreads < 1) {
            throw new IllegalArgumentException("at least one read thread");
        }
        hook = Objects.requireNonNullElse(hook, BatchHook.NONE);
        readFault = Objects.requireNonNullElse(readFault, ReadFault.NONE);
        landedFault = Objects.requireNonNullElse(landedFault, LandedFault.NONE);
    }

    public ApplySettings(
            int slots, BatchHook hook, int readThreads, boolean checksums, ReadFault readFault) {
        this(slots, hook, readThreads, checksums, readFault, LandedFault.NONE);
    }

    /** With checksums, as control-api's proof needs. */
    public static ApplySettings of(int slots, BatchHook hook, int readThreads) {
        return new ApplySettings(slots, hook, readThreads, true, ReadFault.NONE);
    }
}
