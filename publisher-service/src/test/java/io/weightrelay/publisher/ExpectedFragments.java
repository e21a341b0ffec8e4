package io.weightrelay.publisher;

import io.weightrelay.reshard.convert.Floats;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.testkit.sim.DeterministicWeights;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** What a stored fragment must hold, recomputed from the simulated trainer's weights. */
public final class ExpectedFragments {

    private ExpectedFragments() {}

    /**
     * The bf16 bytes of fragment {@code f} of generation {@code g}: the fp32 source bytes of {@link
     * DeterministicWeights} with {@code seed}, converted by the reference conversion.
     */
    public static ByteBuffer bf16(SourceManifest manifest, StoredFragment f, long seed, long g) {
        int index = manifest.tensorIndex().get(f.tensor());
        TensorSpec tensor = manifest.tensors().get(index);
        long inner = tensor.shape().numel() / Math.max(1, tensor.shape().dim(0));
        long first = f.offset().dim(0) * inner;
        int elements = Math.toIntExact(f.shape().numel());
        ByteBuffer source = ByteBuffer.allocate(elements * 4).order(ByteOrder.LITTLE_ENDIAN);
        new DeterministicWeights(seed, g).write(index, tensor, first * 4, source);
        ByteBuffer out = ByteBuffer.allocate(elements * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < elements; i++) {
            out.putShort(Floats.bf16(source.getInt(4 * i)));
        }
        return out.flip();
    }
}
