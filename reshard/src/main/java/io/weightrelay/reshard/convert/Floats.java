package io.weightrelay.reshard.convert;

/** Scalar float conversions on raw IEEE-754 bits. Pure functions. */
public final class Floats {

    private Floats() {}

    /** fp32 bits to bf16 bits, round to nearest even; NaN stays a (quiet) NaN with its sign. */
    public static short bf16(int bits) {
        if ((bits & 0x7fffffff) > 0x7f800000) {
            // Truncation could turn a NaN whose payload sits in the low bits into infinity.
            return (short) ((bits >>> 16) | 0x0040);
        }
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }

    /** fp32 bits to fp16 bits, round to nearest even (subnormals too); NaN stays a quiet NaN. */
    public static short fp16(int bits) {
        int sign = (bits >>> 16) & 0x8000;
        int abs = bits & 0x7fffffff;
        if (abs > 0x7f800000) {
            return (short) (sign | 0x7e00 | ((abs >>> 13) & 0x3ff));
        }
        if (abs >= 0x477ff000) {
            // 65520 and above round to infinity (65504 is the largest finite half).
            return (short) (sign | 0x7c00);
        }
        if (abs >= 0x38800000) {
            int rounded = abs + 0xfff + ((abs >>> 13) & 1);
            return (short) (sign | ((rounded - 0x38000000) >>> 13));
        }
        int exponent = abs >>> 23;
        if (exponent < 102) {
            // Below half of the smallest half subnormal (2^-25): rounds to zero.
            return (short) sign;
        }
        return (short) (sign | roundedSubnormal(abs, 126 - exponent));
    }

    /**
     * fp32 bits to an OCP E4M3 ("e4m3fn": no infinities, largest finite 448, subnormals down to
     * 2^-9) code: round to nearest even (subnormals too), saturating, so everything from 448 up,
     * infinity included, becomes ±448 ({@code 0x7e}/{@code 0xfe}); NaN becomes the NaN code with
     * its sign ({@code 0x7f}/{@code 0xff}); -0 stays {@code 0x80}.
     */
    public static byte e4m3(int bits) {
        int sign = (bits >>> 24) & 0x80;
        int abs = bits & 0x7fffffff;
        if (abs > 0x7f800000) {
            return (byte) (sign | 0x7f);
        }
        if (abs >= 0x43e00000) {
            return (byte) (sign | 0x7e);
        }
        if (abs >= 0x3c800000) {
            // Normal (2^-6 and up): rebias 127 -> 7 and keep 3 of 23 mantissa bits. Below 448 the
            // rounding carries at most into 448 itself.
            int rounded = abs + 0x7ffff + ((abs >>> 20) & 1);
            return (byte) (sign | ((rounded >>> 20) - (120 << 3)));
        }
        int exponent = abs >>> 23;
        if (exponent < 117) {
            // At most half of the smallest subnormal (2^-10): rounds to zero (the tie to even).
            return (byte) sign;
        }
        return (byte) (sign | roundedSubnormal(abs, 141 - exponent));
    }

    /**
     * The mantissa of {@code abs}, implicit bit included, shifted right by {@code shift} and
     * rounded to nearest even: a subnormal's code in a narrower format.
     */
    private static int roundedSubnormal(int abs, int shift) {
        int mantissa = (abs & 0x7fffff) | 0x800000;
        int quotient = mantissa >>> shift;
        int remainder = mantissa & ((1 << shift) - 1);
        int half = 1 << (shift - 1);
        if (remainder > half || (remainder == half && (quotient & 1) == 1)) {
            quotient++;
        }
        return quotient;
    }

    /** E4M3 ("e4m3fn") code to the exactly equal fp32 value ({@code 0x7f}/{@code 0xff}: NaN). */
    public static float fromE4m3(byte code) {
        int c = code & 0xff;
        int exponent = (c >>> 3) & 0xf;
        int mantissa = c & 7;
        float magnitude;
        if (exponent == 0xf && mantissa == 7) {
            magnitude = Float.NaN;
        } else if (exponent == 0) {
            magnitude = mantissa * 0x1p-9f;
        } else {
            magnitude = Float.intBitsToFloat(((exponent + 120) << 23) | (mantissa << 20));
        }
        return (c & 0x80) == 0 ? magnitude : -magnitude;
    }

    /** fp16 bits to the exactly equal fp32 value. */
    public static float fromFp16(short half) {
        int h = half & 0xffff;
        int sign = (h & 0x8000) << 16;
        int exponent = (h >>> 10) & 0x1f;
        int mantissa = h & 0x3ff;
        if (exponent == 0x1f) {
            return Float.intBitsToFloat(sign | 0x7f800000 | (mantissa << 13));
        }
        if (exponent == 0) {
            float value = mantissa * 0x1p-24f;
            return sign == 0 ? value : -value;
        }
        return Float.intBitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
    }

    /** bf16 bits to the exactly equal fp32 value. */
    public static float fromBf16(short bf16) {
        return Float.intBitsToFloat((bf16 & 0xffff) << 16);
    }
}
