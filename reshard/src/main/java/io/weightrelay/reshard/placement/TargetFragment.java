package io.weightrelay.reshard.placement;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import java.util.Objects;

/**
 * One N-D box of a tensor that a parameter-direct worker holds, and where its elements land.
 *
 * @param tensor tensor name
 * @param dtype dtype the worker expects (must equal the manifest's rollout dtype)
 * @param tensorShape full tensor shape the worker expects (must equal the manifest's)
 * @param offset box origin in tensor coordinates
 * @param shape box extent
 * @param buffer id of the registered destination buffer
 * @param bufferOffset byte offset of the box origin in that buffer
 * @param strides byte stride of each dimension in the buffer
 */
public record TargetFragment(
        String tensor,
        DType dtype,
        Shape tensorShape,
        Shape offset,
        Shape shape,
        String buffer,
        long bufferOffset,
        Shape strides) {

    public TargetFragment {
        Objects.requireNonNull(tensor, "tensor");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(buffer, "buffer");
        int rank = tensorShape.rank();
        if (offset.rank() != rank || shape.rank() != rank || strides.rank() != rank) {
            throw new IllegalArgumentException(
                    "tensor " + tensor + ": target fragment ranks differ");
        }
        if (bufferOffset < 0) {
            throw new IllegalArgumentException("tensor " + tensor + ": negative buffer offset");
        }
    }

    /** A fragment stored densely (row-major, no padding) at {@code bufferOffset}. */
    public static TargetFragment dense(
            String tensor,
            DType dtype,
            Shape tensorShape,
            Shape offset,
            Shape shape,
            String buffer,
            long bufferOffset) {
        return new TargetFragment(
                tensor,
                dtype,
                tensorShape,
                offset,
                shape,
                buffer,
                bufferOffset,
                new Shape(
                        io.weightrelay.reshard.manifest.Boxes.contiguousStrides(
                                shape, dtype.bytes())));
    }

    public long bytes() {
        return shape.numel() * dtype.bytes();
    }

    /**
     * One past the last byte the box occupies in its buffer: the size the buffer needs at least.
     */
    public long bufferEnd() {
        if (shape.numel() == 0) {
            return bufferOffset;
        }
        long end = bufferOffset + dtype.bytes();
        for (int d = 0; d < shape.rank(); d++) {
            end += (shape.dim(d) - 1) * strides.dim(d);
        }
        return end;
    }

    /** Writes this fragment as a placement encodes it. */
    void encode(ByteSink out) {
        out.string(tensor).string(dtype.safetensorsName());
        SourceManifest.writeShape(out, tensorShape);
        SourceManifest.writeShape(out, offset);
        SourceManifest.writeShape(out, shape);
        out.string(buffer).varLong(bufferOffset);
        SourceManifest.writeShape(out, strides);
    }

    /** Reads a fragment {@link #encode} wrote. */
    static TargetFragment decode(ByteSource in) {
        return new TargetFragment(
                in.string(),
                DType.parse(in.string()),
                SourceManifest.readShape(in),
                SourceManifest.readShape(in),
                SourceManifest.readShape(in),
                in.string(),
                in.varLong(),
                SourceManifest.readShape(in));
    }
}
