package io.weightrelay.reshard.codec;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/** Reader of the canonical encoding written by {@link ByteSink}. Fails closed on bad input. */
public final class ByteSource {
    private final byte[] bytes;
    private int position;

    public ByteSource(byte[] bytes) {
        this.bytes = bytes;
    }

    private void need(int count) {
        if (count < 0 || position + count > bytes.length) {
            throw new CodecException("truncated input at byte " + position);
        }
    }

    public int u8() {
        need(1);
        return bytes[position++] & 0xFF;
    }

    /** A u8 that must be the ordinal of one of {@code constants}; {@code what} names it if not. */
    public <E extends Enum<E>> E ordinal(E[] constants, String what) {
        int value = u8();
        if (value >= constants.length) {
            throw new CodecException("bad " + what + " " + value);
        }
        return constants[value];
    }

    public long varLong() {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            int b = u8();
            value |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                if (value < 0) {
                    throw new CodecException("varint out of range at byte " + position);
                }
                return value;
            }
        }
        throw new CodecException("varint too long at byte " + position);
    }

    public int varInt() {
        long value = varLong();
        if (value > Integer.MAX_VALUE) {
            throw new CodecException("int out of range: " + value);
        }
        return (int) value;
    }

    /** A count that also bounds how many items may follow, so corrupt input cannot exhaust heap. */
    public int count() {
        int value = varInt();
        if (value > bytes.length - position) {
            throw new CodecException("count " + value + " exceeds remaining input");
        }
        return value;
    }

    /**
     * Decodes one whole encoding: the {@code magic} it must open with, what {@code body} reads, and
     * nothing after it.
     */
    public static <T> T decode(byte[] bytes, String magic, Function<ByteSource, T> body) {
        ByteSource in = new ByteSource(bytes);
        in.expectMagic(magic);
        T value = body.apply(in);
        in.expectEnd();
        return value;
    }

    /** A {@link #count} and then that many items, each read by {@code item}. */
    public <T> List<T> list(Function<ByteSource, T> item) {
        int count = count();
        List<T> items = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            items.add(item.apply(this));
        }
        return items;
    }

    public long fixedLong() {
        need(8);
        long value = 0;
        for (int i = 0; i < 8; i++) {
            value = (value << 8) | (bytes[position++] & 0xFF);
        }
        return value;
    }

    public String string() {
        int length = varInt();
        need(length);
        String value = new String(bytes, position, length, StandardCharsets.UTF_8);
        position += length;
        return value;
    }

    public byte[] raw(int length) {
        need(length);
        byte[] value = new byte[length];
        System.arraycopy(bytes, position, value, 0, length);
        position += length;
        return value;
    }

    public void expectMagic(String magic) {
        String found = string();
        if (!magic.equals(found)) {
            throw new CodecException("expected " + magic + " encoding, found " + found);
        }
    }

    public void expectEnd() {
        if (position != bytes.length) {
            throw new CodecException("trailing bytes after position " + position);
        }
    }
}
