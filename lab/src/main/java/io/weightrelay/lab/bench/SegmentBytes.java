package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.Segment;
import java.nio.ByteBuffer;

/**
 * The bytes {@code ./relay bench dataplane} moves on one machine: every 8-byte word of a source set
 * to a value of its position, so every page is faulted in before the first round and a copy that
 * lands at the wrong offset shows when a target is compared with its source.
 */
final class SegmentBytes {

    private static final int VIEW = 1 << 30;

    private SegmentBytes() {}

    /** Every word of {@code segment} set to a value of its position. */
    static void fill(Segment segment) {
        write(segment, false);
    }

    /** Every word of {@code segment} set to 0. */
    static void zero(Segment segment) {
        write(segment, true);
    }

    /** Whether {@code a} and {@code b} hold the same bytes (the length of {@code a}). */
    static boolean same(Segment a, Segment b) {
        for (long off = 0; off < a.size(); off += VIEW) {
            int len = (int) Math.min(VIEW, a.size() - off);
            if (a.byteBuffer(off, len).mismatch(b.byteBuffer(off, len)) >= 0) {
                return false;
            }
        }
        return true;
    }

    private static void write(Segment segment, boolean zero) {
        for (long off = 0; off < segment.size(); off += VIEW) {
            int len = (int) Math.min(VIEW, segment.size() - off);
            ByteBuffer view = segment.byteBuffer(off, len);
            for (int i = 0; i + 8 <= len; i += 8) {
                view.putLong(i, zero ? 0 : (off + i) * 0x9E3779B97F4A7C15L);
            }
        }
    }
}
