package io.weightrelay.reshard.convert;

/**
 * A deliberately simple block-FP8 reference, written apart from {@link Floats#e4m3} and {@link
 * BlockFp8}: the value of every E4M3 code from its definition, the cast as a search for the nearest
 * code (ties to the even code), and the blocks as plain loops over a 2-D array.
 */
public final class Fp8Reference {

    /** The value of each non-negative finite code 0x00..0x7e. */
    static final double[] VALUES = new double[0x7f];

    static {
        for (int code = 0; code < VALUES.length; code++) {
            int exponent = code >> 3;
            int mantissa = code & 7;
            VALUES[code] =
                    exponent == 0
                            ? mantissa * Math.pow(2, -9)
                            : (1 + mantissa / 8.0) * Math.pow(2, exponent - 7);
        }
    }

    private Fp8Reference() {}

    /** The E4M3 code nearest to x (ties to even), saturating at 448; NaN to 0x7f with x's sign. */
    public static byte e4m3(float x) {
        int sign = Float.floatToRawIntBits(x) < 0 ? 0x80 : 0;
        if (Float.isNaN(x)) {
            return (byte) (sign | 0x7f);
        }
        double target = Math.min(Math.abs((double) x), Double.MAX_VALUE);
        int best = 0;
        double bestDistance = Double.POSITIVE_INFINITY;
        for (int code = 0; code < VALUES.length; code++) {
            double distance = Math.abs(VALUES[code] - target);
            if (distance < bestDistance || (distance == bestDistance && (code & 1) == 0)) {
                best = code;
                bestDistance = distance;
            }
        }
        return (byte) (sign | best);
    }

    /** The decoded value of a code; NaN for 0x7f and 0xff. */
    static double value(byte code) {
        int c = code & 0xff;
        if ((c & 0x7f) == 0x7f) {
            return Double.NaN;
        }
        double v = VALUES[c & 0x7f];
        return (c & 0x80) != 0 ? -v : v;
    }

    /** A weight quantised per 128 x 128 block: codes row-major, scales [blockRows][blockCols]. */
    public record Quantized(byte[][] codes, float[][] scaleInv) {}

    public static Quantized quantize(float[][] weight) {
        int rows = weight.length;
        int cols = rows == 0 ? 0 : weight[0].length;
        int blockRows = (rows + 127) / 128;
        int blockCols = (cols + 127) / 128;
        byte[][] codes = new byte[rows][cols];
        float[][] scales = new float[blockRows][blockCols];
        for (int br = 0; br < blockRows; br++) {
            for (int bc = 0; bc < blockCols; bc++) {
                float amax = 0f;
                for (int r = br * 128; r < Math.min(rows, br * 128 + 128); r++) {
                    for (int c = bc * 128; c < Math.min(cols, bc * 128 + 128); c++) {
                        if (Float.isFinite(weight[r][c])) {
                            amax = Math.max(amax, Math.abs(weight[r][c]));
                        }
                    }
                }
                amax = Math.max(amax, 1e-4f);
                scales[br][bc] = amax / 448f;
                float multiplier = 448f / amax;
                for (int r = br * 128; r < Math.min(rows, br * 128 + 128); r++) {
                    for (int c = bc * 128; c < Math.min(cols, bc * 128 + 128); c++) {
                        float x = weight[r][c];
                        codes[r][c] = Float.isNaN(x) ? e4m3(x) : e4m3(x * multiplier);
                    }
                }
            }
        }
        return new Quantized(codes, scales);
    }
}
