package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.lab.bench.DataplaneRounds.Round;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * An engine's figures of {@code ./relay bench dataplane}, as rounds for {@link DataplaneRounds}, on
 * whichever engine: a transfer as the data plane's API issues it, a publisher's put of a whole
 * object from its segment, and a loader's pull of one in tensor-sized ranges (so each range's round
 * trip shows, not only the bytes).
 */
final class EngineRounds {

    private static final Duration WAIT = Duration.ofMinutes(5);

    private EngineRounds() {}

    /** One transfer of {@code request} by {@code from}'s engine, waited for. */
    static Round transfer(Dataplane from, TransferRequest request) {
        return Round.timed(() -> from.engine().transfer(List.of(request), WAIT));
    }

    /** A put of {@code size} bytes of {@code source} under a fresh key, removed again. */
    static Round puts(StoreClient store, Segment source, long size, ReplicateConfig where) {
        int[] round = {0};
        return Round.timed(
                () -> {
                    String key = "bench/put/" + round[0]++;
                    store.putFrom(key, source, 0, size, where);
                    store.remove(key);
                });
    }

    /** Ranges of {@code step} bytes, enough to hold {@code size}. */
    static long ranges(long size, long step) {
        return (size + step - 1) / step;
    }

    /**
     * One {@code getIntoRanges} of {@code size} bytes of {@code key} in ranges of {@code step},
     * each into the same offset of {@code into}; refused when any range failed.
     */
    static Round rangeReads(StoreClient store, String key, long size, long step, Segment into) {
        List<ReadRange> ranges = new ArrayList<>();
        for (long off = 0; off < size; off += step) {
            ranges.add(new ReadRange(off, Math.min(step, size - off), into, off));
        }
        return Round.timed(
                () -> {
                    for (long n : store.getIntoRanges(key, ranges)) {
                        if (n < 0) {
                            throw new IllegalStateException("range of " + key + " failed: " + n);
                        }
                    }
                });
    }
}
