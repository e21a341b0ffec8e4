package io.weightrelay.loader.update;

import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.pipeline.ApplyCounts;
import io.weightrelay.loader.pipeline.ApplyFailure;
import io.weightrelay.loader.pipeline.PrepareRequest;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.plan.Slice;
import java.time.Duration;
import java.util.function.LongConsumer;

/** The data-plane side of an update, as the state machine drives it. */
public interface UpdateSteps {

    /** A prepared update, ready to apply. */
    interface PreparedUpdate {
        /** Bytes the apply will move through this loader (reads, pushes, fan-outs). */
        long bytesTotal();

        /**
         * Starts the apply's store reads while the update waits for the other loaders: they fill
         * this loader's staging only, never a worker buffer. {@code timeout} counts from now and
         * covers the apply too; {@link #abandon()} stops them if the apply will not run.
         */
        default void readAhead(Duration timeout, LongConsumer progress) {}

        /** Stops the reads {@link #readAhead} started; the apply will not run. */
        default void abandon() {}

        /**
         * Stops the apply from another thread (the session failed elsewhere): a running or starting
         * {@link #apply} fails with {@code why} soon after. Before the apply, nothing.
         */
        default void stop(ApplyFailure why) {}

        /** Runs the apply; throws {@link ApplyFailure}. */
        ApplyCounts apply(Duration timeout, LongConsumer progress);

        /**
         * Once every sender reported SENT: proves what landed in this loader's workers' buffers
         * against {@code sent} (each sender's encoded digests for this instance), reading every
         * received byte as the buffers hold it. Throws {@link ApplyFailure} naming the sender, the
         * worker, the buffer and the generation when they differ.
         *
         * @return the bytes proven
         */
        default long proveLanded(java.util.Map<String, byte[]> sent) {
            return 0;
        }
    }

    /** Validates, checks objects and registers provisionally; touches no buffer byte. */
    PreparedUpdate prepare(PrepareRequest request);

    /**
     * Starts, on another thread, the checks of prepare that depend only on what {@code slice} reads
     * of {@code generation} (peers revalidated, every object in the store with an owner that
     * answers), so they run while control-api answers the prepare call. A {@link #prepare} of the
     * same model, generation and slice waits for them and does not run them again when they passed;
     * when they failed, or were for another slice, it runs its own.
     */
    default void checkReadsAhead(GenerationId generation, Slice slice) {}

    /**
     * Installs what the update fetched: copies each staged direct worker's received segment into
     * the serving copy its engine serves from. Compat and in-place workers hold their bytes
     * already.
     *
     * @return the bytes copied
     */
    default long install(Instance instance) {
        return 0;
    }

    /** Makes this update's provisional registrations persistent. */
    void promote();

    /** Drops this update's provisional registrations. */
    void discard();
}
