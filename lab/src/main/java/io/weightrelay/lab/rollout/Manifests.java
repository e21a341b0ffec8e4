package io.weightrelay.lab.rollout;

import io.weightrelay.api.control.client.model.GenerationManifest;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.trainer.client.Dtypes;
import java.util.ArrayList;
import java.util.List;

/** control-api's manifest as reshard's (fragment ids are the store keys' last part). */
final class Manifests {
    private Manifests() {}

    static SourceManifest toReshard(GenerationManifest m) {
        List<TensorSpec> tensors = new ArrayList<>();
        for (io.weightrelay.api.control.client.model.TensorSpec t : m.getManifest().getTensors()) {
            tensors.add(
                    new TensorSpec(
                            t.getName(),
                            shape(t.getShape()),
                            Dtypes.parse(t.getTrainerDtype().getValue()),
                            Dtypes.parse(t.getRolloutDtype().getValue())));
        }
        List<StoredFragment> fragments = new ArrayList<>();
        for (io.weightrelay.api.control.client.model.StoredFragment f : m.getFragments()) {
            String key = f.getKey();
            fragments.add(
                    new StoredFragment(
                            key.substring(key.lastIndexOf('/') + 1),
                            f.getTensor(),
                            shape(f.getOffset()),
                            shape(f.getShape()),
                            f.getBytes()));
        }
        return new SourceManifest(m.getManifest().getModel(), tensors, fragments);
    }

    private static Shape shape(List<Long> dims) {
        return Shape.of(
                dims == null ? new long[0] : dims.stream().mapToLong(Long::longValue).toArray());
    }
}
