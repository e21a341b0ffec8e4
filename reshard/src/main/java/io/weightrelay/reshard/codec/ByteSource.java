package io.weightrelay.reshard.codec;

import java.nio.charset.StandardCharsets;

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
