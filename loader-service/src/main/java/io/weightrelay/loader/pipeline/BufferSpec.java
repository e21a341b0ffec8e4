package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.ForeignBuffer;
import java.util.Objects;

/**
 * One receive buffer of a worker as its engine registered it.
 *
 * @param bufferId the id target fragments name ({@code safetensors} for the compat image)
 * @param segment the data-plane segment holding it; buffers sharing a segment are packed in
 *     registration order, each at a {@link BufferDirectory#ALIGNMENT}-aligned base
 * @param size bytes
 * @param foreign where the worker's own Transfer Engine holds it, when the worker registered the
 *     memory with one (every buffer of its segment then names the same memory); null for shared
 *     memory the loader creates
 */
public record BufferSpec(String bufferId, String segment, long size, ForeignBuffer foreign) {
    /** A buffer in shared memory the loader creates. */
    public BufferSpec(String bufferId, String segment, long size) {
        this(bufferId, segment, size, null);
    }

    public BufferSpec {
        Objects.requireNonNull(bufferId, "bufferId");
        Objects.requireNonNull(segment, "segment");
        if (size <= 0) {
            throw new IllegalArgumentException("buffer " + bufferId + ": size must be > 0");
        }
    }
}
