package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.zip.CRC32;

/** Deterministic byte patterns for tests and the peer process. */
final class Patterns {
    private Patterns() {}

    static byte at(long index, int seed) {
        return (byte) ((index * 31 + seed * 7 + (index >>> 8)) & 0xff);
    }

    /** Fills {@code length} bytes of {@code buffer} from its position 0 with pattern(seed). */
    static void fill(ByteBuffer buffer, int offset, int length, int seed) {
        for (int i = 0; i < length; i++) {
            buffer.put(offset + i, at(i, seed));
        }
    }

    static long crc(ByteBuffer buffer, int offset, int length) {
        CRC32 crc = new CRC32();
        ByteBuffer view = buffer.duplicate();
        view.limit(offset + length).position(offset);
        crc.update(view);
        return crc.getValue();
    }

    /**
     * Asserts that {@code length} bytes of {@code buffer} from {@code offset} hold pattern(seed).
     */
    static void assertHolds(ByteBuffer buffer, int offset, int length, int seed) {
        assertThat(crc(buffer, offset, length)).isEqualTo(expectedCrc(length, seed));
    }

    static long expectedCrc(int length, int seed) {
        ByteBuffer b = ByteBuffer.allocate(length);
        fill(b, 0, length, seed);
        return crc(b, 0, length);
    }
}
