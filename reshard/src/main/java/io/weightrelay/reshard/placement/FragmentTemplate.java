package io.weightrelay.reshard.placement;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.codec.Digests;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The fragments one rank of a deployment holds, as a loader registers them, independent of which
 * instance, worker or segment holds them: every instance with the same layout registers the same
 * template, so control-api stores it once, by digest, and a worker names it by that digest.
 *
 * <p>Encoding ({@code wr.fragments.v1}, all integers unsigned LEB128, strings length-prefixed
 * UTF-8): the magic; the buffer ids as a count and strings; the fragment count; then per fragment
 * the tensor name front-coded against the previous fragment's (bytes shared, then the rest), the
 * rank, the offset, the shape and the byte strides (rank numbers each), the buffer index and the
 * buffer offset. The digest is the SHA-256 of that encoding, lowercase hex; fragment order is part
 * of it (problems name a fragment by its index).
 */
public final class FragmentTemplate {
    private static final String MAGIC = "wr.fragments.v1";

    /**
     * One box of a tensor and where it lands: element {@code index} at {@code bufferOffset +
     * sum(index[d] * strides[d])} of buffer {@code buffer}.
     */
    public record Entry(
            String tensor,
            long[] offset,
            long[] shape,
            String buffer,
            long bufferOffset,
            long[] strides) {
        public Entry {
            Objects.requireNonNull(tensor, "tensor");
            Objects.requireNonNull(buffer, "buffer");
            Objects.requireNonNull(offset, "offset");
            Objects.requireNonNull(shape, "shape");
            Objects.requireNonNull(strides, "strides");
        }

        public int rank() {
            return shape.length;
        }

        /**
         * This box as the planner sees it, typed by the manifest's tensor of that name.
         *
         * @throws IllegalArgumentException when its ranks differ from the tensor's
         */
        public TargetFragment typed(TensorSpec spec) {
            return new TargetFragment(
                    tensor,
                    spec.rolloutDtype(),
                    spec.shape(),
                    new Shape(offset),
                    new Shape(shape),
                    buffer,
                    bufferOffset,
                    new Shape(strides));
        }

        /** Whether the box holds no element. */
        public boolean empty() {
            for (long d : shape) {
                if (d == 0) {
                    return true;
                }
            }
            return false;
        }
    }

    private final List<Entry> entries;
    private final byte[] encoded;
    private final String digest;

    private FragmentTemplate(List<Entry> entries, byte[] encoded) {
        this.entries = entries;
        this.encoded = encoded;
        this.digest = Digests.sha256Hex(encoded);
    }

    /**
     * A template of these fragments, in this order.
     *
     * @throws IllegalArgumentException when an offset, shape or stride entry is negative, or the
     *     ranks of a box differ (those cannot be encoded)
     */
    public static FragmentTemplate of(List<Entry> entries) {
        return new FragmentTemplate(List.copyOf(entries), encode(entries));
    }

    /** The template of a worker's planner-side fragments, in their order. */
    public static FragmentTemplate ofFragments(List<TargetFragment> fragments) {
        List<Entry> entries = new ArrayList<>(fragments.size());
        for (TargetFragment f : fragments) {
            entries.add(
                    new Entry(
                            f.tensor(),
                            f.offset().dims(),
                            f.shape().dims(),
                            f.buffer(),
                            f.bufferOffset(),
                            f.strides().dims()));
        }
        return of(entries);
    }

    public List<Entry> entries() {
        return entries;
    }

    public int size() {
        return entries.size();
    }

    /** SHA-256 of {@link #encoded()}, lowercase hex. */
    public String digest() {
        return digest;
    }

    /** The canonical encoding (a copy is not made: do not modify). */
    public byte[] encoded() {
        return encoded;
    }

    private static byte[] encode(List<Entry> entries) {
        Map<String, Integer> buffers = new LinkedHashMap<>();
        for (Entry e : entries) {
            buffers.putIfAbsent(e.buffer(), buffers.size());
        }
        ByteSink out = new ByteSink(64 + entries.size() * 24);
        out.string(MAGIC).varInt(buffers.size());
        byte[] previous = new byte[0];
        for (String buffer : buffers.keySet()) {
            previous = frontCoded(out, buffer, previous);
        }
        out.varInt(entries.size());
        previous = new byte[0];
        for (Entry e : entries) {
            int rank = e.shape().length;
            if (e.offset().length != rank || e.strides().length != rank) {
                throw new IllegalArgumentException(
                        "tensor " + e.tensor() + ": offset, shape and strides differ in rank");
            }
            previous = frontCoded(out, e.tensor(), previous);
            out.varInt(rank);
            for (long v : e.offset()) {
                out.varLong(v);
            }
            for (long v : e.shape()) {
                out.varLong(v);
            }
            for (long v : e.strides()) {
                out.varLong(v);
            }
            out.varInt(buffers.get(e.buffer())).varLong(e.bufferOffset());
        }
        return out.toByteArray();
    }

    /**
     * Writes {@code value} as (bytes shared with {@code previous}, the rest); returns its bytes.
     */
    private static byte[] frontCoded(ByteSink out, String value, byte[] previous) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        int shared = 0;
        int limit = Math.min(bytes.length, previous.length);
        while (shared < limit && bytes[shared] == previous[shared]) {
            shared++;
        }
        out.varInt(shared).varInt(bytes.length - shared);
        out.raw(Arrays.copyOfRange(bytes, shared, bytes.length));
        return bytes;
    }

    private static byte[] frontCoded(ByteSource in, byte[] previous, String what) {
        int shared = in.varInt();
        int rest = in.count();
        if (shared > previous.length) {
            throw new CodecException(what + ": bad name prefix");
        }
        byte[] bytes = Arrays.copyOf(previous, shared + rest);
        System.arraycopy(in.raw(rest), 0, bytes, shared, rest);
        return bytes;
    }

    /**
     * Reads a template; its digest is that of {@code bytes}.
     *
     * @throws CodecException when the bytes are not a template
     */
    public static FragmentTemplate decode(byte[] bytes) {
        ByteSource in = new ByteSource(bytes);
        in.expectMagic(MAGIC);
        int bufferCount = in.count();
        String[] buffers = new String[bufferCount];
        byte[] previous = new byte[0];
        for (int b = 0; b < bufferCount; b++) {
            previous = frontCoded(in, previous, "buffer " + b);
            buffers[b] = new String(previous, StandardCharsets.UTF_8);
        }
        int count = in.count();
        List<Entry> entries = new ArrayList<>(count);
        previous = new byte[0];
        for (int i = 0; i < count; i++) {
            byte[] name = frontCoded(in, previous, "fragment " + i);
            previous = name;
            int rank = in.count();
            long[] offset = longs(in, rank);
            long[] shape = longs(in, rank);
            long[] strides = longs(in, rank);
            int buffer = in.varInt();
            if (buffer >= bufferCount) {
                throw new CodecException("fragment " + i + ": buffer index out of range");
            }
            long bufferOffset = in.varLong();
            entries.add(
                    new Entry(
                            new String(name, StandardCharsets.UTF_8),
                            offset,
                            shape,
                            buffers[buffer],
                            bufferOffset,
                            strides));
        }
        in.expectEnd();
        return new FragmentTemplate(List.copyOf(entries), bytes);
    }

    private static long[] longs(ByteSource in, int count) {
        long[] out = new long[count];
        for (int i = 0; i < count; i++) {
            out[i] = in.varLong();
        }
        return out;
    }

    @Override
    public String toString() {
        return "FragmentTemplate[" + digest + ", " + entries.size() + " fragments]";
    }
}
