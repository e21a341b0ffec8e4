package io.weightrelay.reshard.convert;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class FloatsTest {

    @Test
    void bf16RoundsToNearestEven() {
        // 1.0 + half an ulp of bf16 (2^-8) is a tie: stays at the even 1.0.
        assertThat(Floats.bf16(0x3f808000)).isEqualTo((short) 0x3f80);
        // 1.0 + 3/2 ulp is a tie between 0x3f81 (odd) and 0x3f82 (even): goes up.
        assertThat(Floats.bf16(0x3f818000)).isEqualTo((short) 0x3f82);
        // Just above a tie rounds up, just below rounds down.
        assertThat(Floats.bf16(0x3f808001)).isEqualTo((short) 0x3f81);
        assertThat(Floats.bf16(0x3f807fff)).isEqualTo((short) 0x3f80);
        // The largest float rounds to infinity; infinities and zeros keep their sign.
        assertThat(Floats.bf16(0x7f7fffff)).isEqualTo((short) 0x7f80);
        assertThat(Floats.bf16(0xff800000)).isEqualTo((short) 0xff80);
        assertThat(Floats.bf16(0x80000000)).isEqualTo((short) 0x8000);
    }

    @Test
    void bf16KeepsEveryNaN() {
        // A NaN whose payload is only in the low bits would truncate to infinity.
        for (int nan : new int[] {0x7f800001, 0xff800001, 0x7fc00000, 0x7fffffff, 0x7f80ffff}) {
            short b = Floats.bf16(nan);
            assertThat(Float.isNaN(Floats.fromBf16(b))).as(Integer.toHexString(nan)).isTrue();
            assertThat(b & 0x8000).isEqualTo((nan >>> 16) & 0x8000);
        }
    }

    @Test
    void bf16IsNearestForRandomFloats() {
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < 200_000; i++) {
            int bits = random.nextInt();
            float f = Float.intBitsToFloat(bits);
            if (Float.isNaN(f) || Float.isInfinite(f)) {
                continue;
            }
            short r = Floats.bf16(bits);
            if (Float.isInfinite(Floats.fromBf16(r))) {
                // Beyond the largest bf16 plus half an ulp: IEEE rounds to infinity.
                assertThat(Math.abs((double) f)).isGreaterThanOrEqualTo(0x1.ffp127);
                continue;
            }
            assertNearestEven(f, r, Floats.fromBf16(r), neighbours(r, true));
        }
    }

    @Test
    void fp16HandlesEdges() {
        assertThat(Floats.fp16(Float.floatToIntBits(1.0f))).isEqualTo((short) 0x3c00);
        assertThat(Floats.fp16(Float.floatToIntBits(65504f))).isEqualTo((short) 0x7bff);
        assertThat(Floats.fp16(Float.floatToIntBits(65519.99f))).isEqualTo((short) 0x7bff);
        assertThat(Floats.fp16(Float.floatToIntBits(65520f))).isEqualTo((short) 0x7c00);
        assertThat(Floats.fp16(Float.floatToIntBits(-1e10f))).isEqualTo((short) 0xfc00);
        // Smallest subnormal 2^-24; 2^-25 is a tie with zero and goes to the even zero.
        assertThat(Floats.fp16(Float.floatToIntBits(0x1p-24f))).isEqualTo((short) 0x0001);
        assertThat(Floats.fp16(Float.floatToIntBits(0x1p-25f))).isEqualTo((short) 0x0000);
        assertThat(Floats.fp16(Float.floatToIntBits(0x1.8p-24f))).isEqualTo((short) 0x0002);
        assertThat(Floats.fp16(Float.floatToIntBits(-0.0f))).isEqualTo((short) 0x8000);
        assertThat(Float.isNaN(Floats.fromFp16(Floats.fp16(0x7f800001)))).isTrue();
        assertThat(Floats.fp16(0xffc00000) & 0xffff).isEqualTo(0xfe00);
    }

    @Test
    void fp16IsNearestForRandomFloatsInItsRange() {
        SplittableRandom random = new SplittableRandom(2);
        for (int i = 0; i < 200_000; i++) {
            // Exponents around the fp16 range, subnormals included.
            int exponent = 95 + random.nextInt(50);
            int bits = (random.nextInt() & 0x807fffff) | (exponent << 23);
            float f = Float.intBitsToFloat(bits);
            short r = Floats.fp16(bits);
            float decoded = Floats.fromFp16(r);
            if (Float.isInfinite(decoded)) {
                assertThat(Math.abs(f)).isGreaterThanOrEqualTo(65520f);
                continue;
            }
            assertNearestEven(f, r, decoded, neighbours(r, false));
        }
    }

    private static float[] neighbours(short r, boolean bf16) {
        short down = (short) (r - 1);
        short up = (short) (r + 1);
        return bf16
                ? new float[] {Floats.fromBf16(down), Floats.fromBf16(up)}
                : new float[] {Floats.fromFp16(down), Floats.fromFp16(up)};
    }

    private static void assertNearestEven(float f, short r, float decoded, float[] others) {
        double error = Math.abs((double) f - decoded);
        for (float other : others) {
            if (Float.isNaN(other) || Math.signum(other) * Math.signum(decoded) < 0) {
                continue;
            }
            double otherError = Math.abs((double) f - other);
            assertThat(error)
                    .as("%s -> %s vs %s", f, decoded, other)
                    .isLessThanOrEqualTo(otherError);
            if (error == otherError) {
                assertThat(r & 1).as("tie of %s goes to even", f).isZero();
            }
        }
    }
}
