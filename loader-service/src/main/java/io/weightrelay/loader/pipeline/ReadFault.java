package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.ReadRange;
import java.util.List;

/**
 * Called by the read stage after each object's read, before its counts are checked; the lab uses it
 * to make a loader's reads flaky ({@link FlakyReads}). It may replace a count with an error code,
 * change bytes that landed in staging and the checksums taken of them.
 */
@FunctionalInterface
public interface ReadFault {
    ReadFault NONE = (key, ranges, got, crc32c) -> {};

    /**
     * One object's read: {@code got} per range (bytes or an error code), {@code crc32c} per range
     * (null without checksums).
     */
    void afterRead(String key, List<ReadRange> ranges, long[] got, int[] crc32c);
}
