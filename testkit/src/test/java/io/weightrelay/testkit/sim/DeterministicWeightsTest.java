package io.weightrelay.testkit.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

class DeterministicWeightsTest {

    private static ByteBuffer write(DeterministicWeights w, TensorSpec t, long offset, int bytes) {
        ByteBuffer out = ByteBuffer.allocate(bytes);
        w.write(3, t, offset, out);
        return out;
    }

    @Test
    void anyPartEqualsTheSameBytesOfTheWhole() {
        for (DType type : new DType[] {DType.F32, DType.BF16, DType.F16, DType.I8, DType.I64}) {
            TensorSpec t = new TensorSpec("w", Shape.of(37, 11), type, type);
            int total = Math.toIntExact(t.shape().numel() * type.bytes());
            DeterministicWeights weights = new DeterministicWeights(7, 2);
            ByteBuffer whole = write(weights, t, 0, total);
            // Parts starting on odd elements exercise the unaligned head and tail.
            int cut = 5 * type.bytes();
            ByteBuffer head = write(weights, t, 0, cut);
            ByteBuffer tail = write(weights, t, cut, total - cut);
            assertThat(head).as(type.name()).isEqualTo(whole.slice(0, cut));
            assertThat(tail).as(type.name()).isEqualTo(whole.slice(cut, total - cut));
        }
    }

    @Test
    void seedAndGenerationDecideEveryByte() {
        TensorSpec t = new TensorSpec("w", Shape.of(64), DType.BF16, DType.BF16);
        ByteBuffer a = write(new DeterministicWeights(7, 2), t, 0, 128);
        assertThat(write(new DeterministicWeights(7, 2), t, 0, 128)).isEqualTo(a);
        assertThat(write(new DeterministicWeights(7, 3), t, 0, 128)).isNotEqualTo(a);
        assertThat(write(new DeterministicWeights(8, 2), t, 0, 128)).isNotEqualTo(a);
    }

    @Test
    void floatsAreFiniteAndWeightSized() {
        TensorSpec t = new TensorSpec("w", Shape.of(4096), DType.F32, DType.BF16);
        ByteBuffer b =
                write(new DeterministicWeights(1, 1), t, 0, 4096 * 4)
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 4096; i++) {
            float f = b.getFloat(4 * i);
            assertThat(Float.isFinite(f)).isTrue();
            assertThat(Math.abs(f)).isBetween(0x1p-16f, 2f);
        }
    }
}
