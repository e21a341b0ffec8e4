package io.weightrelay.reshard.convert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.manifest.DType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class BlockFp8Test {

    // ---- the scalar cast -----------------------------------------------------------------------

    @Test
    void castAgreesWithTheReferenceOnEveryBf16Value() {
        for (int h = 0; h < 0x10000; h++) {
            float x = Float.intBitsToFloat(h << 16);
            assertThat(Floats.e4m3(h << 16))
                    .as("bf16 0x%04x (%s)", h, x)
                    .isEqualTo(Fp8Reference.e4m3(x));
        }
    }

    @Test
    void castAgreesWithTheReferenceAroundEveryTieAndOnRandomFp32() {
        for (int code = 0; code < 0x7e; code++) {
            float low = (float) Fp8Reference.VALUES[code];
            float high = (float) Fp8Reference.VALUES[code + 1];
            float mid = (low + high) / 2; // exact: both have 4 significant bits
            for (float x :
                    new float[] {
                        low, high, mid, Math.nextDown(mid), Math.nextUp(mid), Math.nextUp(low)
                    }) {
                assertCast(x);
                assertCast(-x);
            }
        }
        for (float x :
                new float[] {
                    0f,
                    -0f,
                    448f,
                    449f,
                    463.99f,
                    464f,
                    480f,
                    1e30f,
                    Float.MAX_VALUE,
                    Float.MIN_VALUE,
                    0x1p-10f,
                    Math.nextUp(0x1p-10f),
                    0x1p-9f,
                    0x1p-6f,
                    Math.nextDown(0x1p-6f),
                    Float.POSITIVE_INFINITY,
                    Float.NEGATIVE_INFINITY
                }) {
            assertCast(x);
            assertCast(-x);
        }
        SplittableRandom random = new SplittableRandom(18);
        for (int i = 0; i < 200_000; i++) {
            assertCast(Float.intBitsToFloat(random.nextInt()));
            // and concentrated on the range E4M3 represents
            assertCast(
                    (float) ((random.nextDouble() - 0.5) * Math.pow(2, random.nextInt(-12, 10))));
        }
    }

    private static void assertCast(float x) {
        assertThat(Floats.e4m3(Float.floatToRawIntBits(x)))
                .as("%s (0x%08x)", x, Float.floatToRawIntBits(x))
                .isEqualTo(Fp8Reference.e4m3(x));
    }

    @Test
    void castSaturatesKeepsNanAndSignedZero() {
        assertThat(Floats.e4m3(Float.floatToRawIntBits(Float.POSITIVE_INFINITY)))
                .isEqualTo((byte) 0x7e);
        assertThat(Floats.e4m3(Float.floatToRawIntBits(Float.NEGATIVE_INFINITY)))
                .isEqualTo((byte) 0xfe);
        assertThat(Floats.e4m3(Float.floatToRawIntBits(1000f))).isEqualTo((byte) 0x7e);
        assertThat(Floats.e4m3(0x7fc00000)).isEqualTo((byte) 0x7f);
        assertThat(Floats.e4m3(0xffc00001)).isEqualTo((byte) 0xff);
        assertThat(Floats.e4m3(0x7f800001)).isEqualTo((byte) 0x7f); // signalling, low payload
        assertThat(Floats.e4m3(Float.floatToRawIntBits(-0f))).isEqualTo((byte) 0x80);
        assertThat(Floats.e4m3(Float.floatToRawIntBits(0x1p-9f))).isEqualTo((byte) 0x01);
        assertThat(Floats.e4m3(Float.floatToRawIntBits(1.5f * 0x1p-9f)))
                .isEqualTo((byte) 0x02); // tie to even
        assertThat(Floats.e4m3(Float.floatToRawIntBits(1f))).isEqualTo((byte) 0x38);
    }

    @Test
    void everyCodeDecodesToItsValueAndCastsBack() {
        for (int c = 0; c < 256; c++) {
            byte code = (byte) c;
            float value = Floats.fromE4m3(code);
            if ((c & 0x7f) == 0x7f) {
                assertThat(value).isNaN();
                continue;
            }
            assertThat((double) value).isEqualTo(Fp8Reference.value(code));
            assertThat(Floats.e4m3(Float.floatToRawIntBits(value))).isEqualTo(code);
        }
    }

    // ---- blocks --------------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(
            value = DType.class,
            names = {"F32", "BF16", "F16"})
    void randomWeightsOfRaggedShapesMatchTheReference(DType type) {
        SplittableRandom random = new SplittableRandom(type.ordinal());
        // {2, 33000}: rows too long to keep a band (BlockFp8.MAX_BAND_ELEMENTS), read twice
        int[][] shapes = {
            {1, 1}, {3, 2}, {127, 129}, {128, 128}, {130, 257}, {300, 5}, {2, 700}, {2, 33000}
        };
        for (int[] shape : shapes) {
            float[][] w = new float[shape[0]][shape[1]];
            for (int r = 0; r < w.length; r++) {
                for (int c = 0; c < w[r].length; c++) {
                    // magnitudes spread over blocks, so block amaxes differ by orders
                    double magnitude = Math.pow(2, random.nextInt(-20, 12) + (c / 128) - (r / 128));
                    w[r][c] = (float) ((random.nextDouble() * 2 - 1) * magnitude);
                }
            }
            float[][] representable = roundTo(w, type);
            assertMatchesReference(representable, type, false);
            assertMatchesReference(representable, type, true);
        }
    }

    @ParameterizedTest
    @EnumSource(
            value = DType.class,
            names = {"F32", "BF16", "F16"})
    void edgeCaseBlocksMatchTheReference(DType type) {
        // 3 x 4 blocks, the last row and column partial: one edge case per block
        float[][] w = new float[300][400];
        SplittableRandom random = new SplittableRandom(7);
        for (float[] row : w) {
            for (int c = 0; c < row.length; c++) {
                row[c] = (float) (random.nextGaussian() * 0.02);
            }
        }
        fill(w, 0, 0, 0f); // all zero
        fill(w, 0, 1, -0f); // all negative zero
        fill(w, 0, 2, Float.NaN); // all NaN
        fill(w, 0, 3, Float.POSITIVE_INFINITY); // all infinite (partial block)
        // input subnormals (fp32 and fp16 ones) beside one normal value
        float tiny =
                type == DType.F16 ? 0x1p-24f : type == DType.BF16 ? 0x1p-133f : Float.MIN_VALUE;
        for (int r = 128; r < 256; r++) {
            for (int c = 0; c < 128; c++) {
                w[r][c] = tiny * ((r + c) % 7 - 3);
            }
        }
        w[130][5] = 0.5f;
        // only input subnormals: amax is clamped to 1e-4 and they all become zero
        for (int r = 128; r < 256; r++) {
            for (int c = 128; c < 256; c++) {
                w[r][c] = tiny * ((r * c) % 5 - 2);
            }
        }
        // outputs in E4M3's subnormal range: amax 448 keeps multiplier 1, values down to 2^-10
        for (int r = 128; r < 256; r++) {
            for (int c = 256; c < 384; c++) {
                w[r][c] =
                        (float) Math.scalb((c % 16 + 1) / 16.0, -6 - (r % 5))
                                * (r % 2 == 0 ? 1 : -1);
            }
        }
        w[200][300] = 448f;
        // NaN and infinities inside an otherwise ordinary block
        w[10][130] = Float.NaN;
        w[11][131] = Float.intBitsToFloat(0xffc00000);
        w[12][132] = Float.POSITIVE_INFINITY;
        w[13][133] = Float.NEGATIVE_INFINITY;
        // a block whose amax lies far above 448 and one whose values all sit at ±amax
        for (int r = 256; r < 300; r++) {
            for (int c = 0; c < 128; c++) {
                w[r][c] = (float) (random.nextGaussian() * 1e4);
            }
            for (int c = 128; c < 256; c++) {
                w[r][c] = (r + c) % 2 == 0 ? 3f : -3f;
            }
        }
        float[][] representable = roundTo(w, type);
        assertMatchesReference(representable, type, false);
        assertMatchesReference(representable, type, true);
    }

    @Test
    void definedBehaviourOfDegenerateBlocks() {
        float[][] w = {
            {
                2f,
                Float.POSITIVE_INFINITY,
                Float.NaN,
                Float.intBitsToFloat(0xffc00000),
                Float.NEGATIVE_INFINITY,
                -1f,
                0f
            }
        };
        Converted out = convert(w, DType.F32, false);
        // amax over the finite values: 2; infinities saturate, NaN stays NaN with its sign
        assertThat(out.scales.getFloat(0)).isEqualTo(2f / 448f);
        assertThat(out.codes).containsExactly(0x7e, 0x7e, 0x7f, 0xff, 0xfe, 0xf6, 0x00);

        Converted zeros = convert(new float[][] {{0f, -0f}}, DType.F32, false);
        assertThat(zeros.scales.getFloat(0)).isEqualTo(1e-4f / 448f);
        assertThat(zeros.codes).containsExactly(0x00, 0x80);

        Converted onlyInf =
                convert(new float[][] {{Float.NEGATIVE_INFINITY, Float.NaN}}, DType.F32, false);
        assertThat(onlyInf.scales.getFloat(0)).isEqualTo(1e-4f / 448f);
        assertThat(onlyInf.codes).containsExactly(0xfe, 0x7f);
    }

    @Test
    void refusesWrongSizesAndTypes() {
        ByteBuffer b = ByteBuffer.allocate(64);
        assertThatThrownBy(() -> BlockFp8.convert(b.slice(0, 12), b, b, DType.F32, 2, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[2, 2] F32");
        assertThatThrownBy(() -> BlockFp8.convert(b, b, b, DType.I8, 8, 8))
                .hasMessageContaining("not I8");
        assertThatThrownBy(
                        () ->
                                BlockFp8.convert(
                                        b.slice(0, 32),
                                        ByteBuffer.allocate(7),
                                        ByteBuffer.allocate(4),
                                        DType.F32,
                                        2,
                                        4))
                .hasMessageContaining("do not fit");
        assertThat(BlockFp8.scaleBytes(300, 129)).isEqualTo(4 * 3 * 2);
    }

    // ---- helpers -------------------------------------------------------------------------------

    private record Converted(int[] codes, ByteBuffer scales, BlockFp8.Result result) {}

    private static void assertMatchesReference(float[][] w, DType type, boolean inPlace) {
        Fp8Reference.Quantized want = Fp8Reference.quantize(w);
        Converted got = convert(w, type, inPlace);
        int rows = w.length;
        int cols = w[0].length;
        ByteBuffer wantCodes = ByteBuffer.allocate(rows * cols);
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                int code = got.codes[r * cols + c];
                assertThat((byte) code)
                        .as("%s %dx%d element [%d][%d] = %s", type, rows, cols, r, c, w[r][c])
                        .isEqualTo(want.codes()[r][c]);
                wantCodes.put(want.codes()[r][c]);
            }
        }
        ByteBuffer wantScales =
                ByteBuffer.allocate(4 * want.scaleInv().length * want.scaleInv()[0].length)
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (float[] row : want.scaleInv()) {
            for (float s : row) {
                wantScales.putFloat(s);
            }
        }
        wantScales.flip();
        wantCodes.flip();
        assertThat(got.scales).as("scales of %s %dx%d", type, rows, cols).isEqualTo(wantScales);
        assertThat(got.result.outputBytes()).isEqualTo((long) rows * cols);
        assertThat(got.result.scaleBytes()).isEqualTo(wantScales.remaining());
        assertThat(got.result.outputCrc()).isEqualTo(Crc32c.of(wantCodes));
        assertThat(got.result.scaleCrc()).isEqualTo(Crc32c.of(wantScales));
    }

    /** Stages w as type (little-endian, 64 bytes into a direct buffer) and converts it. */
    private static Converted convert(float[][] w, DType type, boolean inPlace) {
        int rows = w.length;
        int cols = w[0].length;
        int bytes = rows * cols * type.bytes();
        ByteBuffer staging = ByteBuffer.allocateDirect(64 + bytes).order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                int at = 64 + (r * cols + c) * type.bytes();
                int bits = Float.floatToRawIntBits(w[r][c]);
                switch (type) {
                    case F32 -> staging.putInt(at, bits);
                    case BF16 -> staging.putShort(at, Floats.bf16(bits));
                    default -> staging.putShort(at, Floats.fp16(bits));
                }
            }
        }
        ByteBuffer source = staging.slice(64, bytes);
        int sourceCrc = Crc32c.of(source);
        ByteBuffer target = inPlace ? source : ByteBuffer.allocateDirect(rows * cols);
        ByteBuffer scales =
                ByteBuffer.allocate((int) BlockFp8.scaleBytes(rows, cols))
                        .order(ByteOrder.LITTLE_ENDIAN);
        BlockFp8.Result result = BlockFp8.convert(source, target, scales, type, rows, cols);
        assertThat(result.sourceCrc()).isEqualTo(sourceCrc);
        int[] codes = new int[rows * cols];
        for (int i = 0; i < codes.length; i++) {
            codes[i] = target.get(i) & 0xff;
        }
        return new Converted(codes, scales, result);
    }

    private static void fill(float[][] w, int blockRow, int blockCol, float value) {
        for (int r = blockRow * 128; r < Math.min(w.length, blockRow * 128 + 128); r++) {
            for (int c = blockCol * 128; c < Math.min(w[r].length, blockCol * 128 + 128); c++) {
                w[r][c] = value;
            }
        }
    }

    /** The weight as the staged type holds it, so the reference sees what the converter reads. */
    private static float[][] roundTo(float[][] w, DType type) {
        float[][] out = new float[w.length][];
        for (int r = 0; r < w.length; r++) {
            out[r] = new float[w[r].length];
            for (int c = 0; c < w[r].length; c++) {
                int bits = Float.floatToRawIntBits(w[r][c]);
                out[r][c] =
                        switch (type) {
                            case F32 -> w[r][c];
                            case BF16 -> Floats.fromBf16(Floats.bf16(bits));
                            default -> Floats.fromFp16(Floats.fp16(bits));
                        };
            }
        }
        return out;
    }
}
