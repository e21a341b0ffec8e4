package io.weightrelay.reshard.checksum;

import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.Locale;
import java.util.zip.CRC32C;

/**
 * CRC32C (Castagnoli) of byte ranges, written as {@code crc32c:xxxxxxxx} (the contracts' {@code
 * Checksum} format), and {@link #combine}: the CRC32C of {@code A || B} from the checksums of
 * {@code A} and {@code B} and the length of {@code B}, without their bytes. {@link CRC32C} is
 * intrinsified (SSE4.2 / ARMv8 CRC instructions).
 *
 * <p>The combine is zlib's {@code crc32_combine} (1.2.12 and later) for the Castagnoli polynomial:
 * appending {@code n} zero bytes to {@code A} multiplies its CRC by {@code x^(8n)} modulo the
 * polynomial, computed from a table of {@code x^(2^k)}: about {@code 32 * log2(n)} shifts, not a
 * matrix per bit.
 */
public final class Crc32c {

    /** The algorithm prefix of every checksum this project writes. */
    public static final String PREFIX = "crc32c:";

    /** The Castagnoli polynomial, bit-reflected (the form {@link CRC32C} computes with). */
    private static final int POLYNOMIAL = 0x82f63b78;

    /** {@code X2N[k]} is {@code x^(2^k)} modulo the polynomial, reflected. */
    private static final int[] X2N = new int[32];

    static {
        int p = 1 << 30; // x^1
        X2N[0] = p;
        for (int k = 1; k < 32; k++) {
            p = multiply(p, p);
            X2N[k] = p;
        }
    }

    private Crc32c() {}

    /** CRC32C of the buffer's remaining bytes; its position is left unchanged. */
    public static int of(ByteBuffer bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes.duplicate());
        return (int) crc.getValue();
    }

    /** CRC32C of {@code bytes[offset, offset + length)}. */
    public static int of(byte[] bytes, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, offset, length);
        return (int) crc.getValue();
    }

    /**
     * The CRC32C of {@code A || B}.
     *
     * @param crcA CRC32C of the first part
     * @param crcB CRC32C of the second part
     * @param lengthB bytes in the second part
     */
    public static int combine(int crcA, int crcB, long lengthB) {
        if (lengthB < 0) {
            throw new IllegalArgumentException("negative length " + lengthB);
        }
        return multiply(powerOfX(lengthB, 3), crcA) ^ crcB;
    }

    /**
     * CRC32C of {@code n} zero bytes, without touching them: from the checksums of zero runs of
     * powers of two, combined (for stand-ins that have sizes but no bytes).
     */
    public static int zeros(long n) {
        if (n < 0) {
            throw new IllegalArgumentException("negative length " + n);
        }
        int crc = 0;
        int run = ZERO_BYTE; // CRC32C of 2^k zero bytes
        for (int k = 0; n >> k != 0; k++) {
            if (((n >> k) & 1) != 0) {
                crc = combine(crc, run, 1L << k);
            }
            run = combine(run, run, 1L << k);
        }
        return crc;
    }

    private static final int ZERO_BYTE = of(new byte[1], 0, 1);

    /** {@code crc32c:xxxxxxxx}. */
    public static String format(int crc) {
        return PREFIX + HexFormat.of().toHexDigits(crc);
    }

    /** Parses {@code crc32c:xxxxxxxx}; anything else is refused, naming it. */
    public static int parse(String checksum) {
        String lower = checksum == null ? "" : checksum.toLowerCase(Locale.ROOT);
        if (!lower.startsWith(PREFIX) || lower.length() != PREFIX.length() + 8) {
            throw new IllegalArgumentException(
                    "unsupported checksum '" + checksum + "': expected crc32c:xxxxxxxx");
        }
        return (int) Long.parseLong(lower.substring(PREFIX.length()), 16);
    }

    /** {@code a * b} modulo the polynomial (both reflected: bit 31 is x^0). */
    private static int multiply(int a, int b) {
        int m = 1 << 31;
        int product = 0;
        while (true) {
            if ((a & m) != 0) {
                product ^= b;
                if ((a & (m - 1)) == 0) {
                    return product;
                }
            }
            m >>>= 1;
            b = (b & 1) != 0 ? (b >>> 1) ^ POLYNOMIAL : b >>> 1;
            if (m == 0) {
                return product;
            }
        }
    }

    /** {@code x^(n * 2^k)} modulo the polynomial. */
    private static int powerOfX(long n, int k) {
        int p = 1 << 31; // x^0
        while (n != 0) {
            if ((n & 1) != 0) {
                p = multiply(X2N[k & 31], p);
            }
            n >>>= 1;
            k++;
        }
        return p;
    }
}
