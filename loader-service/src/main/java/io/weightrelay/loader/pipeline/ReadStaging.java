package io.weightrelay.loader.pipeline;

import io.weightrelay.loader.registration.RegistrationKey;
import io.weightrelay.reshard.plan.Planner;

/**
 * The loader's read staging: one receive segment per instance and epoch, where its readers' batches
 * land before they are pushed and strided writes are packed. It is created and pre-faulted when the
 * engine registers, at {@link #upperBound}, so that a prepare only looks it up; a plan that needs
 * more (a batch larger than control-api plans with) grows it in that prepare, and a plan that needs
 * less, or none, uses it as it is.
 */
public final class ReadStaging {

    /** Device name of the read staging in registration keys. */
    public static final String DEVICE = "staging";

    /**
     * What a loader whose slice reads nothing registers when nothing was created at registration:
     * its pipeline still needs a segment, never a batch of staging.
     */
    static final long NO_READS_BYTES = 4096;

    private ReadStaging() {}

    /** The registration of the staging of {@code instance} at {@code epoch}, of {@code bytes}. */
    public static RegistrationKey key(long epoch, String instance, long bytes) {
        return new RegistrationKey(epoch, instance, DEVICE, "staging-" + instance, bytes);
    }

    /**
     * The most staging any plan for {@code workers} workers needs with {@code slots} slots at
     * control-api's batch size ({@link Planner.Options#DEFAULT}, 64 MiB): every worker a reader, so
     * a slot of one batch per worker, and one pack area of a batch per slot ({@link
     * PipelineExecutor#stagingBytes}). For two slots and two workers, 384 MiB.
     */
    public static long upperBound(int slots, int workers) {
        return (long) slots * (Math.max(1, workers) + 1) * Planner.Options.DEFAULT.batchBytes();
    }
}
