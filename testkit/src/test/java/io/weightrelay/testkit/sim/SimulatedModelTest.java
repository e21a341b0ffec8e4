package io.weightrelay.testkit.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import org.junit.jupiter.api.Test;

class SimulatedModelTest {

    @Test
    void fp8RolloutMeansBlockFp8ProjectionsWithTheirScalesAndBf16ForTheRest() {
        SourceManifest m = SimulatedModel.manifest("tiny", DType.F32, DType.F8_E4M3, 64 << 10);
        int quantized = 0;
        for (TensorSpec t : m.tensors()) {
            if (BlockScales.quantized(t)) {
                quantized++;
                assertThat(t.name()).matches(".*_proj(_with_mqa)?\\.weight");
                assertThat(m.tensorIndex()).containsKey(t.name() + "_scale_inv");
            } else if (!t.name().endsWith("_scale_inv")) {
                assertThat(t.rolloutDtype()).as(t.name()).isEqualTo(DType.BF16);
            }
        }
        assertThat(quantized).isPositive();
        assertThat(BlockScales.weightOfScale(m.tensors())).hasSize(quantized);
        assertThat(m.tensors().stream().filter(t -> t.name().contains("norm")))
                .isNotEmpty()
                .allMatch(t -> t.rolloutDtype() == DType.BF16);
    }

    @Test
    void otherRolloutDtypesAreTakenAsTheyAre() {
        SourceManifest m = SimulatedModel.manifest("tiny", DType.F32, DType.BF16, 64 << 10);
        assertThat(m.tensors()).allMatch(t -> t.rolloutDtype() == DType.BF16);
    }
}
