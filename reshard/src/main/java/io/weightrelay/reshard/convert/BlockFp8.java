package io.weightrelay.reshard.convert;

import io.weightrelay.reshard.manifest.DType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * Block-scaled FP8: a 2-D weight (rows x cols, row-major, fp32, bf16 or fp16) becomes E4M3 bytes
 * and one F32 dequantisation multiplier per 128 x 128 block (the last row and column blocks may be
 * partial), the layout DeepSeek-V3 and Kimi-K2 checkpoints ship and vLLM and SGLang load: {@code
 * weight ~= fp8 * weight_scale_inv[row / 128][col / 128]}.
 *
 * <p>Per block, following DeepGEMM's {@code per_block_cast_to_fp8} (the helper vLLM's and SGLang's
 * block-FP8 tests and weight requantisation use): {@code amax = max |x|} clamped below at {@code
 * 1e-4}, {@code scale_inv = amax / 448} and {@code q = e4m3(x * (448 / amax))}, every step in fp32.
 * For blocks of finite values this is bit for bit what that helper gives. Where it leaves the
 * result to chance, this class decides: the amax is taken over the finite elements only, so a NaN
 * is kept as NaN (its sign too) without turning its whole block into NaN, and an infinity saturates
 * to ±448 (±amax after dequantisation) instead of making the scale infinite; a block with no finite
 * nonzero element gets {@code scale_inv = 1e-4 / 448}, and its zeros stay zeros. The cast to E4M3
 * rounds to nearest even and saturates ({@link Floats#e4m3}).
 *
 * <p>Works band by band (128 rows): one pass over the band's rows takes the input checksum and the
 * block maxima (keeping the decoded band, up to {@link #MAX_BAND_ELEMENTS}, else reading it again),
 * a second converts. The output may start where the input starts (in place: a row's output never
 * reaches the input of a later row) or lie in separate memory. Thread safe: scratch is per thread,
 * and different threads may convert different tensors or bands of 128 rows at once.
 */
public final class BlockFp8 {

    /** Rows and columns of a scale block. */
    public static final int BLOCK = 128;

    /** The largest finite E4M3 value. */
    public static final float E4M3_MAX = 448f;

    /** The smallest amax a block is scaled by (DeepGEMM's clamp). */
    public static final float MIN_AMAX = 1e-4f;

    /** At most this many decoded elements of a band are kept between its two passes (16 MiB). */
    static final int MAX_BAND_ELEMENTS = 1 << 22;

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    /**
     * What a conversion saw and produced.
     *
     * @param sourceCrc CRC32C of the input bytes
     * @param outputCrc CRC32C of the E4M3 bytes
     * @param outputBytes E4M3 bytes written ({@code rows * cols})
     * @param scaleCrc CRC32C of the scale bytes
     * @param scaleBytes scale bytes written (4 per block, little-endian F32, row-major)
     */
    public record Result(
            int sourceCrc, int outputCrc, long outputBytes, int scaleCrc, long scaleBytes) {}

    private BlockFp8() {}

    /** Blocks along a dimension of {@code n} elements. */
    public static long blocks(long n) {
        return (n + BLOCK - 1) / BLOCK;
    }

    /** Bytes of the scale tensor of a {@code rows x cols} weight. */
    public static long scaleBytes(long rows, long cols) {
        return Math.multiplyExact(4L, Math.multiplyExact(blocks(rows), blocks(cols)));
    }

    /**
     * Converts all of {@code source} (a {@code rows x cols} weight of type {@code from}) into the
     * start of {@code target} (which may be {@code source} itself) and its scales into the start of
     * {@code scales}, which are written last: they must not overlap the E4M3 output but may lie in
     * the source's bytes after it.
     *
     * @throws IllegalArgumentException if the type is not fp32, bf16 or fp16, the source is not
     *     {@code rows x cols} elements, or a target is too small
     */
    public static Result convert(
            ByteBuffer source,
            ByteBuffer target,
            ByteBuffer scales,
            DType from,
            long rows,
            long cols) {
        if (from != DType.F32 && from != DType.BF16 && from != DType.F16) {
            throw new IllegalArgumentException(
                    "block FP8 converts F32, BF16 or F16, not " + from.safetensorsName());
        }
        if (rows < 0 || cols < 0 || cols > Integer.MAX_VALUE / 4) {
            throw new IllegalArgumentException("bad weight shape [" + rows + ", " + cols + "]");
        }
        int width = from.bytes();
        long elements = Math.multiplyExact(rows, cols);
        if (source.remaining() != Math.multiplyExact(elements, (long) width)) {
            throw new IllegalArgumentException(
                    source.remaining()
                            + " bytes are not a ["
                            + rows
                            + ", "
                            + cols
                            + "] "
                            + from.safetensorsName()
                            + " weight");
        }
        long scaleBytes = scaleBytes(rows, cols);
        if (target.remaining() < elements || scales.remaining() < scaleBytes) {
            throw new IllegalArgumentException(
                    elements
                            + " E4M3 bytes and "
                            + scaleBytes
                            + " scale bytes do not fit "
                            + target.remaining()
                            + " and "
                            + scales.remaining());
        }
        ByteBuffer in = source.slice().order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer out = target.slice();
        ByteBuffer scaleOut = scales.slice().order(ByteOrder.LITTLE_ENDIAN);
        int n = (int) cols;
        int colBlocks = (int) blocks(cols);
        // The band's decoded elements are kept for the second pass when they fit the bound.
        boolean keepBand = (long) BLOCK * n <= MAX_BAND_ELEMENTS;
        Scratch s = SCRATCH.get().fit(keepBand ? BLOCK * n : n, n, colBlocks);
        CRC32C inCrc = new CRC32C();
        CRC32C outCrc = new CRC32C();
        CRC32C scaleCrc = new CRC32C();
        if (scaleBytes == 0) {
            return new Result(0, 0, 0, 0, 0); // no element: the CRC32C of nothing is 0
        }
        int rowBytes = n * width;
        for (long band = 0; band < rows; band += BLOCK) {
            long bandEnd = Math.min(rows, band + BLOCK);
            Arrays.fill(s.amax, 0, colBlocks, 0f);
            for (long r = band; r < bandEnd; r++) {
                ByteBuffer row = in.slice(Math.toIntExact(r * rowBytes), rowBytes);
                inCrc.update(row.duplicate());
                int at = keepBand ? (int) (r - band) * n : 0;
                read(row, from, n, s.bits, at, s.halves);
                blockMaxima(s.bits, at, n, s.amax);
            }
            for (int b = 0; b < colBlocks; b++) {
                float amax = Math.max(s.amax[b], MIN_AMAX);
                s.multiplier[b] = E4M3_MAX / amax;
                float scaleInv = amax / E4M3_MAX;
                s.scaleBytes.putFloat(4 * b, scaleInv);
            }
            s.keepScales(Math.toIntExact(band / BLOCK * colBlocks * 4L), 4 * colBlocks);
            for (long r = band; r < bandEnd; r++) {
                int at = keepBand ? (int) (r - band) * n : 0;
                if (!keepBand) {
                    read(
                            in.slice(Math.toIntExact(r * rowBytes), rowBytes),
                            from,
                            n,
                            s.bits,
                            0,
                            s.halves);
                }
                quantize(s.bits, at, n, s.multiplier, s.codes);
                out.put(Math.toIntExact(r * n), s.codes, 0, n);
                outCrc.update(s.codes, 0, n);
            }
        }
        // Written last, so the scales may go into the source's bytes after the E4M3 output.
        int scaleLength = Math.toIntExact(scaleBytes);
        scaleOut.put(0, s.scales, 0, scaleLength);
        scaleCrc.update(s.scales, 0, scaleLength);
        return new Result(
                (int) inCrc.getValue(),
                (int) outCrc.getValue(),
                elements,
                (int) scaleCrc.getValue(),
                scaleBytes);
    }

    /** One row's elements as fp32 bits, into {@code bits[at, at + n)}. */
    private static void read(
            ByteBuffer bytes, DType from, int n, int[] bits, int at, short[] halves) {
        ByteBuffer row = bytes.order(ByteOrder.LITTLE_ENDIAN);
        if (from == DType.F32) {
            row.asIntBuffer().get(bits, at, n);
            return;
        }
        row.asShortBuffer().get(halves, 0, n);
        if (from == DType.BF16) {
            for (int i = 0; i < n; i++) {
                bits[at + i] = (halves[i] & 0xffff) << 16;
            }
        } else {
            for (int i = 0; i < n; i++) {
                bits[at + i] = Float.floatToRawIntBits(Floats.fromFp16(halves[i]));
            }
        }
    }

    /** Folds one row into the maxima of |x| over the finite elements of each column block. */
    private static void blockMaxima(int[] bits, int at, int n, float[] amax) {
        for (int start = 0, b = 0; start < n; start += BLOCK, b++) {
            int end = at + Math.min(n, start + BLOCK);
            int max = Float.floatToRawIntBits(amax[b]);
            for (int i = at + start; i < end; i++) {
                // On magnitude bits, ordering as integers is ordering as floats; NaN and infinity
                // are the only values at or above 0x7f800000.
                int abs = bits[i] & 0x7fffffff;
                if (abs < 0x7f800000 && abs > max) {
                    max = abs;
                }
            }
            amax[b] = Float.intBitsToFloat(max);
        }
    }

    private static void quantize(int[] bits, int at, int n, float[] multiplier, byte[] codes) {
        for (int start = 0, b = 0; start < n; start += BLOCK, b++) {
            int end = Math.min(n, start + BLOCK);
            float m = multiplier[b];
            for (int i = start; i < end; i++) {
                int x = bits[at + i];
                // A NaN's sign after a multiplication is the platform's choice: take the input's.
                codes[i] =
                        (x & 0x7fffffff) > 0x7f800000
                                ? (byte) (((x >>> 24) & 0x80) | 0x7f)
                                : Floats.e4m3(Float.floatToRawIntBits(Float.intBitsToFloat(x) * m));
            }
        }
    }

    private static final class Scratch {
        int[] bits = new int[0];
        short[] halves = new short[0];
        byte[] codes = new byte[0];
        float[] amax = new float[0];
        float[] multiplier = new float[0];
        ByteBuffer scaleBytes = ByteBuffer.allocate(0);
        byte[] scales = new byte[0];

        /** Keeps one band's scales at {@code at} of the tensor's scale bytes. */
        void keepScales(int at, int length) {
            if (scales.length < at + length) {
                scales = Arrays.copyOf(scales, Math.max(at + length, 2 * scales.length));
            }
            System.arraycopy(scaleBytes.array(), 0, scales, at, length);
        }

        Scratch fit(int elements, int cols, int colBlocks) {
            if (bits.length < elements) {
                bits = new int[elements];
            }
            if (codes.length < cols) {
                codes = new byte[cols];
                halves = new short[cols];
            }
            if (amax.length < colBlocks) {
                amax = new float[colBlocks];
                multiplier = new float[colBlocks];
                scaleBytes = ByteBuffer.allocate(4 * colBlocks).order(ByteOrder.LITTLE_ENDIAN);
            }
            return this;
        }
    }
}
