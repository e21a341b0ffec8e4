package io.weightrelay.control.plan;

import io.weightrelay.api.control.model.ConsumeMode;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.Nic;
import io.weightrelay.api.control.model.TargetFragment;
import io.weightrelay.api.control.model.Topology;
import io.weightrelay.api.control.model.WorkerPlacement;
import io.weightrelay.control.generation.ManifestMapper;
import io.weightrelay.control.registry.PlacementChecks;
import io.weightrelay.control.registry.RegistryProblems;
import io.weightrelay.reshard.codec.Digests;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The planner's three inputs for a generation and a rollout group, built from the generation's
 * manifest, its trainer topology and the group's live loader registrations.
 */
record PlanInputs(
        SourceManifest source,
        TargetPlacement placement,
        io.weightrelay.reshard.topology.Topology topology) {

    /** The plan id: SHA-256 over the three digests. */
    String planId() {
        String joined =
                source.digest() + "\n" + placement.digest() + "\n" + topology.digest() + "\n";
        return Digests.sha256Hex(joined.getBytes(StandardCharsets.UTF_8));
    }

    static PlanInputs of(
            SourceManifest source, Topology trainers, List<Loader> loaders, double defaultGbps) {
        Map<String, TensorSpec> tensors = new LinkedHashMap<>();
        source.tensors().forEach(t -> tensors.put(t.name(), t));
        Map<String, List<Nic>> nicsByNode = new LinkedHashMap<>();
        for (Loader loader : loaders) {
            if (loader.getNics() != null && !loader.getNics().isEmpty()) {
                nicsByNode.putIfAbsent(loader.getNode(), loader.getNics());
            }
        }
        Map<String, TreeSet<String>> namedNics = new LinkedHashMap<>();
        for (Loader loader : loaders) {
            for (WorkerPlacement w : loader.getWorkers()) {
                namedNics.computeIfAbsent(w.getNode(), n -> new TreeSet<>()).add(w.getNic());
            }
        }
        namedNics.forEach(
                (node, names) -> {
                    if (!nicsByNode.containsKey(node)) {
                        List<Nic> nics = new ArrayList<>();
                        names.forEach(name -> nics.add(new Nic(name, defaultGbps)));
                        nicsByNode.put(node, nics);
                    }
                });
        boolean anyCompat =
                loaders.stream()
                        .flatMap(l -> l.getWorkers().stream())
                        .anyMatch(w -> w.getMode() == ConsumeMode.COMPAT);
        long imageBytes = anyCompat ? SafetensorsLayout.of(source).imageBytes() : 0;
        List<Worker> workers = new ArrayList<>();
        for (Loader loader : loaders) {
            for (WorkerPlacement w : loader.getWorkers()) {
                // Fail closed before any plan exists: a placement that disagrees with the
                // manifest would write wrong bytes into the worker's weights.
                PlacementChecks.againstManifest(loader.getInstance(), w, tensors, imageBytes);
                workers.add(worker(loader.getInstance(), w, nicsByNode.get(w.getNode()), tensors));
            }
        }
        List<Node> nodes = new ArrayList<>(ManifestMapper.nodes(trainers, Role.TRAINER));
        nicsByNode.forEach(
                (node, nics) -> nodes.add(ManifestMapper.node(node, nics, Role.ROLLOUT)));
        try {
            return new PlanInputs(
                    source,
                    new TargetPlacement(workers),
                    new io.weightrelay.reshard.topology.Topology(nodes));
        } catch (IllegalArgumentException ex) {
            throw PlanProblems.PLAN_FAILED.exception(ex.getMessage());
        }
    }

    private static Worker worker(
            String instance,
            WorkerPlacement w,
            List<Nic> nodeNics,
            Map<String, TensorSpec> tensors) {
        int nic = -1;
        for (int i = 0; i < nodeNics.size(); i++) {
            if (nodeNics.get(i).getName().equals(w.getNic())) {
                nic = i;
            }
        }
        if (nic < 0) {
            throw RegistryProblems.INVALID_PLACEMENT.exception(
                    "worker "
                            + w.getWorkerId()
                            + " uses NIC "
                            + w.getNic()
                            + " that its node "
                            + w.getNode()
                            + " does not declare");
        }
        Mode mode = w.getMode() == ConsumeMode.COMPAT ? Mode.COMPAT : Mode.DIRECT;
        List<io.weightrelay.reshard.placement.TargetFragment> fragments = new ArrayList<>();
        if (w.getFragments() != null) {
            for (TargetFragment f : w.getFragments()) {
                TensorSpec t = tensors.get(f.getTensor());
                try {
                    fragments.add(
                            new io.weightrelay.reshard.placement.TargetFragment(
                                    f.getTensor(),
                                    t.rolloutDtype(),
                                    t.shape(),
                                    shape(f.getOffset()),
                                    shape(f.getShape()),
                                    f.getBufferId(),
                                    f.getBufferOffset(),
                                    shape(f.getStrides())));
                } catch (IllegalArgumentException ex) {
                    throw PlanProblems.PLAN_FAILED.exception(ex.getMessage());
                }
            }
        }
        try {
            return new Worker(
                    w.getWorkerId(),
                    instance,
                    w.getNode(),
                    nic,
                    1,
                    mode,
                    w.getBuffers().get(0).getSegment(),
                    fragments);
        } catch (IllegalArgumentException ex) {
            throw RegistryProblems.INVALID_PLACEMENT.exception(ex.getMessage());
        }
    }

    private static Shape shape(List<Long> values) {
        long[] dims = new long[values.size()];
        for (int i = 0; i < dims.length; i++) {
            dims[i] = values.get(i);
        }
        return new Shape(dims);
    }
}
