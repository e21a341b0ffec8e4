package io.weightrelay.loader.update;

import io.weightrelay.loader.pipeline.ApplyCounts;
import io.weightrelay.loader.pipeline.PrepareRequest;
import java.time.Duration;
import java.util.function.LongConsumer;

/** The data-plane side of an update, as the state machine drives it. */
public interface UpdateSteps {

    /** A prepared update, ready to apply. */
    interface PreparedUpdate {
        /** Bytes the apply will move through this loader (reads, pushes, fan-outs). */
        long bytesTotal();

        /** Runs the apply; throws {@link io.weightrelay.loader.pipeline.ApplyFailure}. */
        ApplyCounts apply(Duration timeout, LongConsumer progress);
    }

    /** Validates, checks objects and registers provisionally; touches no buffer byte. */
    PreparedUpdate prepare(PrepareRequest request);

    /** Makes this update's provisional registrations persistent. */
    void promote();

    /** Drops this update's provisional registrations. */
    void discard();
}
