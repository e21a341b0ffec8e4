package io.weightrelay.testkit.sim;

import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.trainer.client.TensorSource;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;

/**
 * Tensor contents as a pure function of (seed, generation, tensor index, element index): any part
 * of any tensor can be produced on any node, and a reader can recompute what it should have read.
 * Floats are finite values of weight-like magnitude (2^-15 to 2); other types are raw bits.
 *
 * <p>Thread safe (stateless apart from its two numbers).
 */
public final class DeterministicWeights implements TensorSource {

    private static final int CHUNK_WORDS = 4096;

    private final long seed;
    private final long generation;

    public DeterministicWeights(long seed, long generation) {
        this.seed = seed;
        this.generation = generation;
    }

    @Override
    public void write(int tensorIndex, TensorSpec tensor, long tensorOffset, ByteBuffer target) {
        DType type = tensor.trainerDtype();
        int width = type.bytes();
        int lanes = 8 / width;
        ByteBuffer out = target.slice().order(ByteOrder.LITTLE_ENDIAN);
        long base =
                mix(seed * 0x9E3779B97F4A7C15L ^ generation * 0xC2B2AE3D27D4EB4FL ^ tensorIndex);
        long element = tensorOffset / width;
        long end = element + out.remaining() / width;
        int pos = 0;
        while (element < end && element % lanes != 0) {
            putElement(out, pos, type, element(base, element, type));
            pos += width;
            element++;
        }
        long words = (end - element) / lanes;
        if (words > 0) {
            LongBuffer longs =
                    out.slice(pos, Math.toIntExact(words * 8))
                            .order(ByteOrder.LITTLE_ENDIAN)
                            .asLongBuffer();
            long[] chunk = new long[CHUNK_WORDS];
            long firstWord = element / lanes;
            for (long w = 0; w < words; w += CHUNK_WORDS) {
                int n = (int) Math.min(CHUNK_WORDS, words - w);
                for (int i = 0; i < n; i++) {
                    chunk[i] = word(base, firstWord + w + i, type);
                }
                longs.put(chunk, 0, n);
            }
            element += words * lanes;
            pos += Math.toIntExact(words * 8);
        }
        while (element < end) {
            putElement(out, pos, type, element(base, element, type));
            pos += width;
            element++;
        }
    }

    /** Element {@code element} of the tensor, from its word. */
    private static long element(long base, long element, DType type) {
        int width = type.bytes();
        int lanes = 8 / width;
        return lane(word(base, element / lanes, type), element % lanes, width);
    }

    /** Eight bytes of the tensor: {@code lanes} elements, shaped like weights for float types. */
    static long word(long base, long index, DType type) {
        long r = mix(base + index * 0x9E3779B97F4A7C15L);
        return switch (type) {
            case F32 -> shapeFp32(r);
            case BF16 -> shapeHalves(r, 0x807fL, 7, 0x70);
            case F16 -> shapeHalves(r, 0x83ffL, 10, 0x08);
            default -> r;
        };
    }

    private static long shapeFp32(long r) {
        long out = 0;
        for (int lane = 0; lane < 2; lane++) {
            long h = (r >>> (32 * lane)) & 0xffffffffL;
            long exponent = 0x70 + ((h >>> 23) & 0x0f);
            out |= ((h & 0x807fffffL) | (exponent << 23)) << (32 * lane);
        }
        return out;
    }

    private static long shapeHalves(long r, long keep, int mantissaBits, int exponentBase) {
        long out = 0;
        for (int lane = 0; lane < 4; lane++) {
            long h = (r >>> (16 * lane)) & 0xffffL;
            long exponent = exponentBase + ((h >>> mantissaBits) & 0x07);
            out |= ((h & keep) | (exponent << mantissaBits)) << (16 * lane);
        }
        return out;
    }

    private static long lane(long word, long lane, int width) {
        return width == 8 ? word : (word >>> (lane * width * 8)) & ((1L << (width * 8)) - 1);
    }

    private static void putElement(ByteBuffer out, int pos, DType type, long bits) {
        switch (type.bytes()) {
            case 1 -> out.put(pos, (byte) bits);
            case 2 -> out.putShort(pos, (short) bits);
            case 4 -> out.putInt(pos, (int) bits);
            default -> out.putLong(pos, bits);
        }
    }

    /** splitmix64's finaliser. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
