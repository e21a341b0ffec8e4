package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.DataplaneError;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.Segment;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

/**
 * Lab only ({@code relay.loader.flaky-reads-file}): while the file exists, every other object read
 * of this loader goes wrong, as on a host with a failing NIC or bad memory. The file's first word
 * says how: {@code fail}, the read fails with an I/O error; {@code wrong-bytes}, it lands with one
 * byte of its first range flipped in staging and its checksum taken over the wrong bytes, as the
 * data plane would take it over what landed. Removing the file makes the reader healthy again.
 */
public final class FlakyReads implements ReadFault {

    /** What the file asks for. */
    enum Mode {
        FAIL,
        WRONG_BYTES
    }

    private final Path file;
    private final AtomicLong reads = new AtomicLong();

    public FlakyReads(Path file) {
        this.file = file;
    }

    @Override
    public void afterRead(String key, List<ReadRange> ranges, long[] got, int[] crc32c) {
        Mode mode = mode();
        if (mode == null || ranges.isEmpty() || reads.getAndIncrement() % 2 != 0) {
            return;
        }
        ReadRange first = ranges.get(0);
        if (mode == Mode.FAIL) {
            got[0] = DataplaneError.IO.code();
        } else if (got[0] == first.length()
                && first.length() > 0
                && first.destination() instanceof Segment staging) {
            ByteBuffer landed = staging.byteBuffer(first.destinationOffset(), (int) first.length());
            landed.put(0, (byte) (landed.get(0) ^ 0x5a));
            if (crc32c != null) {
                CRC32C crc = new CRC32C();
                crc.update(landed.duplicate());
                crc32c[0] = (int) crc.getValue();
            }
        }
    }

    /** The mode the file names, or null while there is no file (or it names none). */
    Mode mode() {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException noFile) {
            return null;
        }
        return switch (text.toLowerCase(Locale.ROOT)) {
            case "fail" -> Mode.FAIL;
            case "wrong-bytes" -> Mode.WRONG_BYTES;
            default -> null;
        };
    }
}
