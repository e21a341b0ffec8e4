package io.weightrelay.trainer.client;

import io.weightrelay.reshard.manifest.TensorSpec;
import java.nio.ByteBuffer;

/**
 * Where a rank gets tensor bytes from. In a VeRL hook, {@link #write} is the device-to-host copy of
 * the reconstructed tensor straight into staging; {@link #skip} is the collective the rank still
 * joins for a tensor another node publishes (or after a failure), so the ranks' collective order
 * never diverges. Neither is called for a block-FP8 scale tensor ({@code <weight>_scale_inv}): the
 * publisher computes it while converting its weight, so no rank holds it.
 */
public interface TensorSource {

    /**
     * Writes bytes {@code [tensorOffset, tensorOffset + target.remaining())} of the tensor, in the
     * trainer dtype and little-endian, into {@code target} (a slice of staging).
     */
    void write(int tensorIndex, TensorSpec tensor, long tensorOffset, ByteBuffer target);

    /** The rank does not hand this tensor over but still takes part in producing it. */
    default void skip(int tensorIndex, TensorSpec tensor) {}
}
