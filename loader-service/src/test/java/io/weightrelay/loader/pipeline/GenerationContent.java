package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.nio.ByteBuffer;
import java.util.Map;

/**
 * Deterministic bytes of a generation: byte {@code i} of tensor {@code t} (row-major, rollout
 * dtype) follows from (seed, generation, t, i) alone, so any process can check any byte it holds.
 * Stand-in until the simulated trainer's generator is published by trainer-client.
 */
final class GenerationContent {
    private final long seed;
    private final long generation;

    GenerationContent(long seed, long generation) {
        this.seed = seed;
        this.generation = generation;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    private long tensorSeed(int tensor) {
        return mix(seed * 0x9e3779b97f4a7c15L + generation * 0xc2b2ae3d27d4eb4fL + tensor);
    }

    /** Byte {@code index} of tensor {@code tensor}. */
    byte at(int tensor, long index) {
        long word = mix(tensorSeed(tensor) + (index >>> 3));
        return (byte) (word >>> ((index & 7) * 8));
    }

    /** Fills {@code out} (position to limit) with tensor bytes starting at {@code index}. */
    void fill(int tensor, long index, ByteBuffer out) {
        long ts = tensorSeed(tensor);
        while (out.hasRemaining()) {
            long word = mix(ts + (index >>> 3));
            out.put((byte) (word >>> ((index & 7) * 8)));
            index++;
        }
    }

    /** Compares {@code length} bytes of {@code in} at {@code pos} with the tensor's from index. */
    long firstMismatch(int tensor, long index, ByteBuffer in, int pos, int length) {
        long ts = tensorSeed(tensor);
        for (int k = 0; k < length; k++) {
            long i = index + k;
            byte want = (byte) (mix(ts + (i >>> 3)) >>> ((i & 7) * 8));
            if (in.get(pos + k) != want) {
                return k;
            }
        }
        return -1;
    }

    /** Byte index in its tensor of the first byte of a dim-0 fragment. */
    static long tensorIndexOf(SourceManifest manifest, StoredFragment f) {
        Map<String, Integer> index = manifest.tensorIndex();
        TensorSpec spec = manifest.tensors().get(index.get(f.tensor()));
        long rowBytes =
                spec.shape().rank() == 0
                        ? spec.bytes()
                        : spec.bytes() / Math.max(1, spec.shape().dim(0));
        for (int d = 1; d < f.offset().rank(); d++) {
            if (f.offset().dim(d) != 0 || f.shape().dim(d) != spec.shape().dim(d)) {
                throw new IllegalArgumentException("only dim-0 fragments: " + f.fragment());
            }
        }
        return f.offset().rank() == 0 ? 0 : f.offset().dim(0) * rowBytes;
    }
}
