package io.weightrelay.reshard.checksum;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.CodecException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The CRC32C of every byte range a loader read from the store, as it reports them with its applied
 * counts. Encoded as {@code wr.crc.v1}: per object (ordered by object id) the id once, then its
 * ranges by offset as (offset delta, length, CRC). About 10 bytes a range plus each id once; base64
 * of it is what travels in the report.
 *
 * @param entries the ranges, any order; {@link #encode} sorts them
 */
public record RangeChecksums(List<Entry> entries) {
    private static final String MAGIC = "wr.crc.v1";

    /** The CRC32C of bytes {@code [offset, offset + length)} of stored object {@code object}. */
    public record Entry(String object, long offset, long length, int crc) {
        public Entry {
            if (object == null || object.isEmpty()) {
                throw new IllegalArgumentException("a range checksum needs its object");
            }
            if (offset < 0 || length < 0) {
                throw new IllegalArgumentException(
                        "range [" + offset + ", +" + length + ") of " + object + " is negative");
            }
        }

        public long end() {
            return offset + length;
        }
    }

    private static final Comparator<Entry> ORDER =
            Comparator.comparing(Entry::object)
                    .thenComparingLong(Entry::offset)
                    .thenComparingLong(Entry::length);

    public RangeChecksums {
        entries = List.copyOf(entries);
    }

    public byte[] encode() {
        List<Entry> sorted = new ArrayList<>(entries);
        sorted.sort(ORDER);
        ByteSink sink = new ByteSink(16 + sorted.size() * 12);
        sink.string(MAGIC);
        int objects = 0;
        for (int i = 0; i < sorted.size(); i++) {
            if (i == 0 || !sorted.get(i).object().equals(sorted.get(i - 1).object())) {
                objects++;
            }
        }
        sink.varInt(objects);
        int i = 0;
        while (i < sorted.size()) {
            String object = sorted.get(i).object();
            int j = i;
            while (j < sorted.size() && sorted.get(j).object().equals(object)) {
                j++;
            }
            sink.string(object);
            sink.varInt(j - i);
            long previous = 0;
            for (int k = i; k < j; k++) {
                Entry e = sorted.get(k);
                sink.varLong(e.offset() - previous);
                sink.varLong(e.length());
                int crc = e.crc();
                sink.u8(crc >>> 24).u8((crc >>> 16) & 0xFF).u8((crc >>> 8) & 0xFF).u8(crc & 0xFF);
                previous = e.offset();
            }
            i = j;
        }
        return sink.toByteArray();
    }

    /** Decodes {@link #encode}'s bytes; fails closed ({@link CodecException}) on anything else. */
    public static RangeChecksums decode(byte[] bytes) {
        ByteSource in = new ByteSource(bytes);
        in.expectMagic(MAGIC);
        int objects = in.count();
        List<Entry> entries = new ArrayList<>();
        for (int o = 0; o < objects; o++) {
            String object = in.string();
            int n = in.count();
            long offset = 0;
            for (int k = 0; k < n; k++) {
                offset += in.varLong();
                long length = in.varLong();
                int crc = (in.u8() << 24) | (in.u8() << 16) | (in.u8() << 8) | in.u8();
                try {
                    entries.add(new Entry(object, offset, length, crc));
                } catch (IllegalArgumentException e) {
                    throw new CodecException(e.getMessage());
                }
            }
        }
        in.expectEnd();
        return new RangeChecksums(entries);
    }
}
