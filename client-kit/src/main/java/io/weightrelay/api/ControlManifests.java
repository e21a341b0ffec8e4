package io.weightrelay.api;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.common.model.Nic;
import io.weightrelay.api.common.model.Node;
import io.weightrelay.api.common.model.Topology;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.model.GenerationManifest;
import io.weightrelay.api.control.client.model.OpenGenerationRequest;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.util.ArrayList;
import java.util.List;

/**
 * The one mapping between the control-api contract's manifests (client model) and reshard's, both
 * ways: a trainer opens a generation with reshard's tensors, a client that plans reads the
 * generation manifest back as reshard's.
 */
public final class ControlManifests {
    private ControlManifests() {}

    /**
     * A generation's manifest in reshard's binary encoding ({@link SourceManifest#decode}): a tenth
     * of the JSON at Kimi-K2 scale, decoded in linear time.
     */
    public static byte[] encoded(GenerationsApi generations, String model, long generation) {
        return generations
                .getGenerationManifestEncodedWithResponseSpec(model, generation)
                .body(byte[].class);
    }

    /** The reshard manifest of a control-api manifest (fragment ids are the keys' last part). */
    public static SourceManifest toReshard(GenerationManifest m) {
        List<TensorSpec> tensors = new ArrayList<>();
        for (io.weightrelay.api.common.model.TensorSpec t : m.getManifest().getTensors()) {
            tensors.add(
                    new TensorSpec(
                            t.getName(),
                            shape(t.getShape()),
                            DType.ofWireName(t.getTrainerDtype().getValue()),
                            DType.ofWireName(t.getRolloutDtype().getValue())));
        }
        List<StoredFragment> fragments = new ArrayList<>();
        for (io.weightrelay.api.common.model.StoredFragment f : m.getFragments()) {
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

    /**
     * The request that opens a generation of {@code manifest} (its tensors, cut into fragments of
     * at most {@code maxFragmentBytes}) from these trainer nodes, each declared with one 100 Gb/s
     * NIC.
     */
    public static OpenGenerationRequest openRequest(
            SourceManifest manifest,
            List<String> trainerNodes,
            long trainerStep,
            long maxFragmentBytes) {
        List<Node> nodes = new ArrayList<>();
        for (String n : trainerNodes) {
            nodes.add(new Node().name(n).nics(List.of(new Nic().name("nic0").gbps(100.0))));
        }
        return new OpenGenerationRequest()
                .trainerStep(trainerStep)
                .manifest(
                        new io.weightrelay.api.common.model.SourceManifest()
                                .model(manifest.model())
                                .tensors(tensors(manifest))
                                .maxFragmentBytes(maxFragmentBytes))
                .trainerTopology(new Topology().nodes(nodes));
    }

    /** reshard's tensors as the contract's. */
    private static List<io.weightrelay.api.common.model.TensorSpec> tensors(
            SourceManifest manifest) {
        List<io.weightrelay.api.common.model.TensorSpec> out = new ArrayList<>();
        for (TensorSpec t : manifest.tensors()) {
            List<Long> shape = new ArrayList<>(t.shape().rank());
            for (long d : t.shape().dims()) {
                shape.add(d);
            }
            out.add(
                    new io.weightrelay.api.common.model.TensorSpec()
                            .name(t.name())
                            .shape(shape)
                            .trainerDtype(Dtype.fromValue(t.trainerDtype().wireName()))
                            .rolloutDtype(Dtype.fromValue(t.rolloutDtype().wireName())));
        }
        return out;
    }

    private static Shape shape(List<Long> dims) {
        return Shape.of(
                dims == null ? new long[0] : dims.stream().mapToLong(Long::longValue).toArray());
    }
}
