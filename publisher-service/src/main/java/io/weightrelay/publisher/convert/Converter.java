package io.weightrelay.publisher.convert;

import io.weightrelay.reshard.convert.Floats;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * Converts a run of elements and checksums it in the same pass, in place (the output starts where
 * the input starts: a narrowing conversion never overtakes its input when it walks forward) or into
 * separate memory, such as the block of the store segment the objects will live in. Each chunk is
 * checksummed as input, converted, and checksummed as output while it is in cache.
 *
 * <p>Thread safe: the scratch arrays are per thread. Different threads may convert disjoint runs of
 * the same buffer at once.
 */
public final class Converter {

    /** Elements per chunk: 32 KiB of fp32 input, well inside L2. */
    static final int CHUNK = 8192;

    private static final ThreadLocal<int[]> INTS = ThreadLocal.withInitial(() -> new int[CHUNK]);
    private static final ThreadLocal<short[]> SHORTS =
            ThreadLocal.withInitial(() -> new short[CHUNK]);

    /**
     * What a conversion saw and produced.
     *
     * @param sourceCrc CRC32C of the input bytes
     * @param outputCrc CRC32C of the output bytes
     * @param outputBytes output length, starting at the input's position
     */
    public record Result(int sourceCrc, int outputCrc, long outputBytes) {}

    private Converter() {}

    /**
     * Converts {@code sourceBytes} bytes at {@code position} of {@code buffer} in place.
     *
     * @throws IllegalArgumentException if the length is not a whole number of input elements
     */
    public static Result convertInPlace(
            ByteBuffer buffer, int position, int sourceBytes, Conversion conversion) {
        ByteBuffer run = buffer.slice(position, sourceBytes);
        return convert(run, run, conversion);
    }

    /**
     * Converts all of {@code source} into the start of {@code target}, which is either {@code
     * source} itself (in place: the output starts where the input starts) or memory that does not
     * overlap it. Pass-through with a separate target copies.
     *
     * @throws IllegalArgumentException if the source is not a whole number of input elements or the
     *     target is too small
     */
    public static Result convert(ByteBuffer source, ByteBuffer target, Conversion conversion) {
        int sourceBytes = source.remaining();
        if (sourceBytes % conversion.sourceWidth() != 0) {
            throw new IllegalArgumentException(
                    sourceBytes + " bytes are not whole " + conversion + " input elements");
        }
        if (conversion.blockScaled()) {
            throw new IllegalArgumentException(
                    conversion
                            + " needs the weight's 2-D shape and a place for its scales: BlockFp8");
        }
        long outputBytes = conversion.outputBytes(sourceBytes);
        if (target.remaining() < outputBytes) {
            throw new IllegalArgumentException(
                    outputBytes + " output bytes do not fit " + target.remaining());
        }
        ByteBuffer in = source.slice();
        ByteBuffer out = target.slice();
        if (conversion == Conversion.PASS_THROUGH) {
            int crc = Checksums.crc32c(in.duplicate());
            if (source != target) {
                out.put(in);
            }
            return new Result(crc, crc, sourceBytes);
        }
        CRC32C inCrc = new CRC32C();
        CRC32C outCrc = new CRC32C();
        int[] ints = INTS.get();
        short[] shorts = SHORTS.get();
        int elements = sourceBytes / 4;
        for (int done = 0; done < elements; done += CHUNK) {
            int n = Math.min(CHUNK, elements - done);
            ByteBuffer chunk = in.slice(4 * done, 4 * n);
            inCrc.update(chunk.duplicate());
            chunk.order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(ints, 0, n);
            if (conversion == Conversion.FP32_TO_BF16) {
                for (int i = 0; i < n; i++) {
                    shorts[i] = Floats.bf16(ints[i]);
                }
            } else {
                for (int i = 0; i < n; i++) {
                    shorts[i] = Floats.fp16(ints[i]);
                }
            }
            ByteBuffer written = out.slice(2 * done, 2 * n);
            written.duplicate().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().put(shorts, 0, n);
            outCrc.update(written);
        }
        return new Result((int) inCrc.getValue(), (int) outCrc.getValue(), 2L * elements);
    }
}
