package io.weightrelay.loader.registration;

import java.nio.ByteBuffer;
import java.util.zip.CRC32;

/** Deterministic test bytes and their checksum, for the registration tests that move them. */
final class TestBytes {
    private TestBytes() {}

    /** Fills the whole of {@code b} with a pattern of {@code seed} that no other seed repeats. */
    static void fill(ByteBuffer b, int seed) {
        for (int i = 0; i < b.capacity(); i++) {
            b.put(i, (byte) (i * 31 + seed * 7 + (i >>> 9)));
        }
    }

    /** The CRC32 of the whole of {@code b}, whatever its position and limit. */
    static long crc(ByteBuffer b) {
        CRC32 c = new CRC32();
        c.update(b.duplicate().clear());
        return c.getValue();
    }
}
