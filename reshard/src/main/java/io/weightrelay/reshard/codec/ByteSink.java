package io.weightrelay.reshard.codec;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

/** Growable byte buffer that writes the canonical encoding. Not thread safe. */
public final class ByteSink {
    private byte[] bytes;
    private int size;
    private final MessageDigest digest;

    public ByteSink() {
        this(256);
    }

    public ByteSink(int initialCapacity) {
        bytes = new byte[Math.max(16, initialCapacity)];
        digest = null;
    }

    private ByteSink(MessageDigest digest) {
        bytes = new byte[1 << 16];
        this.digest = digest;
    }

    /**
     * A sink that streams into SHA-256 instead of keeping the bytes, so digesting a placement of
     * millions of fragments never materialises its encoding.
     */
    public static ByteSink sha256() {
        try {
            return new ByteSink(MessageDigest.getInstance("SHA-256"));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every JDK", e);
        }
    }

    /** Lowercase hex SHA-256 of everything written to a {@link #sha256()} sink. */
    public String digestHex() {
        if (digest == null) {
            throw new IllegalStateException("not a digesting sink");
        }
        digest.update(bytes, 0, size);
        size = 0;
        return HexFormat.of().formatHex(digest.digest());
    }

    private void ensure(int extra) {
        if (digest != null && size + extra > bytes.length) {
            digest.update(bytes, 0, size);
            size = 0;
        }
        if (size + extra > bytes.length) {
            long wanted = Math.max((long) bytes.length * 2, (long) size + extra);
            if (wanted > Integer.MAX_VALUE - 16) {
                throw new IllegalStateException("encoding exceeds 2 GiB");
            }
            bytes = Arrays.copyOf(bytes, (int) wanted);
        }
    }

    public ByteSink u8(int value) {
        ensure(1);
        bytes[size++] = (byte) value;
        return this;
    }

    /** Unsigned LEB128; negative values are rejected because no field of ours is signed. */
    public ByteSink varLong(long value) {
        if (value < 0) {
            throw new IllegalArgumentException("negative varint " + value);
        }
        ensure(10);
        while ((value & ~0x7FL) != 0) {
            bytes[size++] = (byte) ((value & 0x7F) | 0x80);
            value >>>= 7;
        }
        bytes[size++] = (byte) value;
        return this;
    }

    public ByteSink varInt(int value) {
        return varLong(value);
    }

    public ByteSink fixedLong(long value) {
        ensure(8);
        for (int shift = 56; shift >= 0; shift -= 8) {
            bytes[size++] = (byte) (value >>> shift);
        }
        return this;
    }

    public ByteSink string(String value) {
        byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
        varInt(utf8.length);
        return raw(utf8);
    }

    public ByteSink raw(byte[] value) {
        if (digest != null && value.length > bytes.length) {
            digest.update(bytes, 0, size);
            size = 0;
            digest.update(value);
            return this;
        }
        ensure(value.length);
        System.arraycopy(value, 0, bytes, size, value.length);
        size += value.length;
        return this;
    }

    /** Appends everything written to {@code other} (a sink that keeps its bytes). */
    public ByteSink raw(ByteSink other) {
        if (other.digest != null) {
            throw new IllegalStateException("a digesting sink keeps no bytes");
        }
        if (digest != null && other.size > bytes.length) {
            digest.update(bytes, 0, size);
            size = 0;
            digest.update(other.bytes, 0, other.size);
            return this;
        }
        ensure(other.size);
        System.arraycopy(other.bytes, 0, bytes, size, other.size);
        size += other.size;
        return this;
    }

    public int size() {
        return size;
    }

    public byte[] toByteArray() {
        if (digest != null) {
            throw new IllegalStateException("a digesting sink keeps no bytes");
        }
        return Arrays.copyOf(bytes, size);
    }
}
