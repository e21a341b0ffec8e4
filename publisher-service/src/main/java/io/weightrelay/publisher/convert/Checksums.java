package io.weightrelay.publisher.convert;

import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.Locale;
import java.util.zip.CRC32C;

/**
 * CRC32C checksums written as {@code crc32c:xxxxxxxx} (the contracts' {@code Checksum} format).
 * {@link CRC32C} is hardware-accelerated; {@link #combine} joins the checksums of adjacent parts
 * without reading their bytes again.
 */
public final class Checksums {

    /** The algorithm prefix of every checksum this project writes. */
    public static final String CRC32C_PREFIX = "crc32c:";

    private static final int POLYNOMIAL = 0x82f63b78; // CRC32C (Castagnoli), reflected

    private Checksums() {}

    /** CRC32C of the buffer's remaining bytes; the buffer's position is left unchanged. */
    public static int crc32c(ByteBuffer bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes.duplicate());
        return (int) crc.getValue();
    }

    /** {@code crc32c:xxxxxxxx}. */
    public static String format(int crc) {
        return CRC32C_PREFIX + HexFormat.of().toHexDigits(crc);
    }

    /** Parses {@code crc32c:xxxxxxxx}. */
    public static int parse(String checksum) {
        String lower = checksum.toLowerCase(Locale.ROOT);
        if (!lower.startsWith(CRC32C_PREFIX) || lower.length() != CRC32C_PREFIX.length() + 8) {
            throw new IllegalArgumentException(
                    "unsupported checksum '" + checksum + "': expected crc32c:xxxxxxxx");
        }
        return (int) Long.parseLong(lower.substring(CRC32C_PREFIX.length()), 16);
    }

    /**
     * The CRC32C of {@code A || B} from {@code crc(A)}, {@code crc(B)} and the length of B (the
     * zlib {@code crc32_combine} method over GF(2), with the Castagnoli polynomial).
     */
    public static int combine(int crcA, int crcB, long lengthB) {
        if (lengthB <= 0) {
            return crcA;
        }
        int[] even = new int[32];
        int[] odd = new int[32];
        odd[0] = POLYNOMIAL;
        int row = 1;
        for (int n = 1; n < 32; n++) {
            odd[n] = row;
            row <<= 1;
        }
        square(even, odd);
        square(odd, even);
        int crc = crcA;
        long length = lengthB;
        do {
            square(even, odd);
            if ((length & 1) != 0) {
                crc = times(even, crc);
            }
            length >>>= 1;
            if (length == 0) {
                break;
            }
            square(odd, even);
            if ((length & 1) != 0) {
                crc = times(odd, crc);
            }
            length >>>= 1;
        } while (length != 0);
        return crc ^ crcB;
    }

    private static int times(int[] matrix, int vector) {
        int sum = 0;
        for (int i = 0; vector != 0; i++, vector >>>= 1) {
            if ((vector & 1) != 0) {
                sum ^= matrix[i];
            }
        }
        return sum;
    }

    private static void square(int[] target, int[] matrix) {
        for (int n = 0; n < 32; n++) {
            target[n] = times(matrix, matrix[n]);
        }
    }
}
