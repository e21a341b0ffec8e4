package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StoreClient;
import java.util.ArrayList;
import java.util.List;

/**
 * A loader's pull as {@code ./relay bench dataplane} measures it: one {@code getIntoRanges} of a
 * whole stored object cut into ranges of one size (tensor-sized, so each range's round trip shows,
 * not only the bytes), every range required whole.
 *
 * @param store the reading side's Store client
 * @param key the object
 * @param ranges the object's bytes in order, each into the same offset of the target segment
 */
record RangeReads(StoreClient store, String key, List<ReadRange> ranges) {

    /** {@code size} bytes of {@code key} in ranges of {@code step}, into {@code into}. */
    static RangeReads of(StoreClient store, String key, long size, long step, Segment into) {
        List<ReadRange> ranges = new ArrayList<>();
        for (long off = 0; off < size; off += step) {
            ranges.add(new ReadRange(off, Math.min(step, size - off), into, off));
        }
        return new RangeReads(store, key, List.copyOf(ranges));
    }

    /** One pull of every range; refused when any range failed. */
    void run() {
        for (long n : store.getIntoRanges(key, ranges)) {
            if (n < 0) {
                throw new IllegalStateException("range of " + key + " failed: " + n);
            }
        }
    }
}
