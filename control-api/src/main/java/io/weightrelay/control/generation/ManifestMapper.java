package io.weightrelay.control.generation;

import io.weightrelay.api.control.model.Dtype;
import io.weightrelay.api.control.model.Nic;
import io.weightrelay.api.control.model.SourceManifest;
import io.weightrelay.api.control.model.TensorSpec;
import io.weightrelay.api.control.model.Topology;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import java.util.ArrayList;
import java.util.List;

/**
 * Translates the REST contract's manifests and topologies into the reshard planner's types. The
 * stored fragments follow from the manifest alone (the reshard {@link Fragmenter}), so the same
 * manifest always yields the same objects and digest.
 */
public final class ManifestMapper {

    private ManifestMapper() {}

    /** The planner's manifest; 400 {@code invalid-manifest} when it is not a valid one. */
    public static io.weightrelay.reshard.manifest.SourceManifest toReshard(SourceManifest api) {
        try {
            List<io.weightrelay.reshard.manifest.TensorSpec> tensors =
                    new ArrayList<>(api.getTensors().size());
            for (TensorSpec t : api.getTensors()) {
                long[] dims = new long[t.getShape().size()];
                for (int i = 0; i < dims.length; i++) {
                    dims[i] = t.getShape().get(i);
                }
                tensors.add(
                        new io.weightrelay.reshard.manifest.TensorSpec(
                                t.getName(),
                                new Shape(dims),
                                dtype(t.getTrainerDtype()),
                                dtype(t.getRolloutDtype())));
            }
            long maxFragmentBytes =
                    api.getMaxFragmentBytes() == null
                            ? Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES
                            : api.getMaxFragmentBytes();
            return Fragmenter.fragment(api.getModel(), tensors, maxFragmentBytes);
        } catch (IllegalArgumentException | ArithmeticException | NullPointerException ex) {
            throw GenerationProblems.INVALID_MANIFEST.exception(String.valueOf(ex.getMessage()));
        }
    }

    /** The trainer nodes of a topology; 400 {@code invalid-topology} when it is not valid. */
    public static io.weightrelay.reshard.topology.Topology trainerTopology(Topology api) {
        return new io.weightrelay.reshard.topology.Topology(nodes(api, Role.TRAINER));
    }

    /** Nodes of one role; NIC bandwidth per node is the mean of its NICs. */
    public static List<Node> nodes(Topology api, Role role) {
        try {
            List<Node> nodes = new ArrayList<>(api.getNodes().size());
            for (io.weightrelay.api.control.model.Node n : api.getNodes()) {
                nodes.add(node(n.getName(), n.getNics(), role));
            }
            // Constructing the topology checks for duplicate names.
            new io.weightrelay.reshard.topology.Topology(nodes);
            return nodes;
        } catch (IllegalArgumentException | NullPointerException ex) {
            throw GenerationProblems.INVALID_TOPOLOGY.exception(String.valueOf(ex.getMessage()));
        }
    }

    public static Node node(String name, List<Nic> nics, Role role) {
        double sum = 0;
        for (Nic nic : nics) {
            sum += nic.getGbps();
        }
        return new Node(name, role, nics.size(), sum / nics.size());
    }

    public static DType dtype(Dtype api) {
        return switch (api) {
            case FP32 -> DType.F32;
            case BF16 -> DType.BF16;
            case FP16 -> DType.F16;
            case FP8_E4M3 -> DType.F8_E4M3;
            case INT8 -> DType.I8;
            case INT32 -> DType.I32;
            case INT64 -> DType.I64;
        };
    }
}
