package io.weightrelay.api;

import io.weightrelay.api.control.client.model.GenerationManifest;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.util.ArrayList;
import java.util.List;

/** control-api's generation manifest (client model) as reshard's, for the clients that plan. */
public final class ControlManifests {
    private ControlManifests() {}

    /** The reshard manifest of a control-api manifest (fragment ids are the keys' last part). */
    public static SourceManifest toReshard(GenerationManifest m) {
        List<TensorSpec> tensors = new ArrayList<>();
        for (io.weightrelay.api.control.client.model.TensorSpec t : m.getManifest().getTensors()) {
            tensors.add(
                    new TensorSpec(
                            t.getName(),
                            shape(t.getShape()),
                            DType.ofWireName(t.getTrainerDtype().getValue()),
                            DType.ofWireName(t.getRolloutDtype().getValue())));
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
