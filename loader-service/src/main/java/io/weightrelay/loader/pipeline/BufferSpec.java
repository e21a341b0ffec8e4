package io.weightrelay.loader.pipeline;

import java.util.Objects;

/**
 * One receive buffer of a worker as its engine registered it.
 *
 * @param bufferId the id target fragments name ({@code safetensors} for the compat image)
 * @param segment the data-plane segment holding it; buffers sharing a segment are packed in
 *     registration order, each at a {@link BufferDirectory#ALIGNMENT}-aligned base
 * @param size bytes
 */
public record BufferSpec(String bufferId, String segment, long size) {
    public BufferSpec {
        Objects.requireNonNull(bufferId, "bufferId");
        Objects.requireNonNull(segment, "segment");
        if (size <= 0) {
            throw new IllegalArgumentException("buffer " + bufferId + ": size must be > 0");
        }
    }
}
