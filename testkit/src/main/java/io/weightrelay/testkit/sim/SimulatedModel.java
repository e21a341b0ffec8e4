package io.weightrelay.testkit.sim;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.util.ArrayList;
import java.util.List;

/**
 * The manifest a simulated trainer publishes for a catalogued model; its bytes are {@link
 * DeterministicWeights}.
 */
public final class SimulatedModel {

    private SimulatedModel() {}

    /**
     * The catalogued model's tensors with the given dtypes, cut into fragments. Rollout dtype
     * {@code F8_E4M3} from a floating-point trainer dtype means what FP8 serving checkpoints hold:
     * the tensors {@link Fp8BlockRule#defaults()} selects become block-scaled FP8 with their scale
     * tensors, the rest BF16.
     */
    public static SourceManifest manifest(
            String model, DType trainerDtype, DType rolloutDtype, long maxFragmentBytes) {
        boolean blockFp8 = rolloutDtype == DType.F8_E4M3 && trainerDtype != DType.F8_E4M3;
        List<TensorSpec> tensors = new ArrayList<>();
        for (TensorSpec t : ModelCatalog.tensors(model)) {
            tensors.add(
                    new TensorSpec(
                            t.name(),
                            t.shape(),
                            trainerDtype,
                            blockFp8 ? DType.BF16 : rolloutDtype));
        }
        if (blockFp8) {
            tensors = Fp8BlockRule.defaults().apply(tensors);
        }
        return Fragmenter.fragment(model, tensors, maxFragmentBytes);
    }
}
