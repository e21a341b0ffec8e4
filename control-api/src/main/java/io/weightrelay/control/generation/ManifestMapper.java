package io.weightrelay.control.generation;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.common.model.Nic;
import io.weightrelay.api.common.model.RolloutQuantization;
import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.common.model.TensorSpec;
import io.weightrelay.api.common.model.Topology;
import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Translates the REST contract's manifests and topologies into the reshard planner's types. The
 * stored fragments follow from the manifest alone (the reshard {@link Fragmenter}), so the same
 * manifest always yields the same objects and digest.
 */
public final class ManifestMapper {

    private ManifestMapper() {}

    private static final int MAX_NAME = 512;
    private static final int MAX_RANK = 8;

    /**
     * The contract's rules for each tensor (name of 1 to 512 characters, shape of at most 8
     * non-negative dimensions, both dtypes, {@code splitDim} and {@code expert} at least -1), in
     * one pass: bean validation does not cascade into a manifest's tensors (see {@code
     * ManifestTensorsChecked}). 400 {@code invalid-request} naming the tensor and field.
     */
    public static void checkTensors(SourceManifest api) {
        List<TensorSpec> tensors = api.getTensors();
        for (int i = 0; i < tensors.size(); i++) {
            TensorSpec t = tensors.get(i);
            String at = "manifest.tensors[" + i + "]";
            if (t == null) {
                throw invalid(at, "must not be null");
            }
            if (t.getName() == null || t.getName().isEmpty() || t.getName().length() > MAX_NAME) {
                throw invalid(at + ".name", "size must be between 1 and " + MAX_NAME);
            }
            List<Long> shape = t.getShape();
            if (shape == null || shape.size() > MAX_RANK) {
                throw invalid(at + ".shape", "at most " + MAX_RANK + " dimensions");
            }
            for (int d = 0; d < shape.size(); d++) {
                if (shape.get(d) == null || shape.get(d) < 0) {
                    throw invalid(at + ".shape[" + d + "]", "must be greater than or equal to 0");
                }
            }
            if (t.getTrainerDtype() == null) {
                throw invalid(at + ".trainerDtype", "must not be null");
            }
            if (t.getRolloutDtype() == null) {
                throw invalid(at + ".rolloutDtype", "must not be null");
            }
            if (t.getSplitDim() != null && t.getSplitDim() < -1) {
                throw invalid(at + ".splitDim", "must be greater than or equal to -1");
            }
            if (t.getExpert() != null && t.getExpert() < -1) {
                throw invalid(at + ".expert", "must be greater than or equal to -1");
            }
        }
    }

    private static RuntimeException invalid(String field, String message) {
        return CommonProblems.INVALID_REQUEST
                .exception(field + ": " + message)
                .with("field", field);
    }

    /** At most this many include and this many exclude patterns (the contract's maxItems). */
    private static final int MAX_PATTERNS = 64;

    /**
     * The manifest with its {@code rolloutQuantization} rule applied ({@link Fp8BlockRule}): each
     * selected tensor gets rollout dtype {@code fp8_e4m3} and is followed by its scale tensor
     * (which keeps the weight's {@code splitDim} and {@code expert}: it is split the same way, at
     * block granularity). Without a rule the manifest itself. 400 {@code invalid-manifest} naming
     * the tensor and pattern when the rule cannot be applied.
     */
    public static SourceManifest applyRule(SourceManifest api) {
        RolloutQuantization rule = api.getRolloutQuantization();
        if (rule == null) {
            return api;
        }
        try {
            for (String field : List.of("include", "exclude")) {
                List<String> patterns =
                        field.equals("include") ? rule.getInclude() : rule.getExclude();
                if (patterns != null && patterns.size() > MAX_PATTERNS) {
                    throw CommonProblems.INVALID_REQUEST
                            .exception(
                                    "manifest.rolloutQuantization."
                                            + field
                                            + ": at most "
                                            + MAX_PATTERNS
                                            + " patterns")
                            .with("field", "manifest.rolloutQuantization." + field);
                }
            }
            Fp8BlockRule fp8 = Fp8BlockRule.of(rule.getInclude(), rule.getExclude());
            List<io.weightrelay.reshard.manifest.TensorSpec> specs =
                    new ArrayList<>(api.getTensors().size());
            Map<String, TensorSpec> byName = new HashMap<>(api.getTensors().size() * 2);
            for (TensorSpec t : api.getTensors()) {
                specs.add(spec(t));
                byName.put(t.getName(), t);
            }
            List<TensorSpec> tensors = new ArrayList<>();
            for (io.weightrelay.reshard.manifest.TensorSpec t : fp8.apply(specs)) {
                TensorSpec given = byName.get(t.name());
                if (given == null) {
                    // a scale tensor: split like its weight
                    String weight =
                            t.name().substring(0, t.name().length() - BlockScales.SUFFIX.length());
                    given = byName.get(weight);
                }
                tensors.add(
                        new TensorSpec(
                                        t.name(),
                                        boxed(t.shape().dims()),
                                        Dtype.fromValue(t.trainerDtype().wireName()),
                                        Dtype.fromValue(t.rolloutDtype().wireName()))
                                .splitDim(given.getSplitDim())
                                .expert(given.getExpert()));
            }
            return new SourceManifest(api.getModel(), tensors)
                    .maxFragmentBytes(api.getMaxFragmentBytes())
                    .rolloutQuantization(rule);
        } catch (Fp8BlockRule.RuleException e) {
            RelayException problem =
                    GenerationProblems.INVALID_MANIFEST.exception(
                            "manifest.rolloutQuantization: " + e.getMessage());
            if (e.tensor() != null) {
                problem.with("tensor", e.tensor());
            }
            if (e.pattern() != null) {
                problem.with("pattern", e.pattern());
            }
            throw problem;
        }
    }

    private static io.weightrelay.reshard.manifest.TensorSpec spec(TensorSpec t) {
        long[] dims = new long[t.getShape().size()];
        for (int i = 0; i < dims.length; i++) {
            dims[i] = t.getShape().get(i);
        }
        return new io.weightrelay.reshard.manifest.TensorSpec(
                t.getName(),
                new Shape(dims),
                dtype(t.getTrainerDtype()),
                dtype(t.getRolloutDtype()));
    }

    private static List<Long> boxed(long[] dims) {
        List<Long> out = new ArrayList<>(dims.length);
        for (long d : dims) {
            out.add(d);
        }
        return out;
    }

    /** The planner's manifest; 400 {@code invalid-manifest} when it is not a valid one. */
    public static io.weightrelay.reshard.manifest.SourceManifest toReshard(SourceManifest api) {
        try {
            List<io.weightrelay.reshard.manifest.TensorSpec> tensors =
                    new ArrayList<>(api.getTensors().size());
            for (TensorSpec t : api.getTensors()) {
                tensors.add(spec(t));
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
            for (io.weightrelay.api.common.model.Node n : api.getNodes()) {
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

    /** reshard's type of a contract dtype. */
    public static DType dtype(Dtype api) {
        return DType.ofWireName(api.getValue());
    }
}
