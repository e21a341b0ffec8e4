package io.weightrelay.control.plan;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.Nic;
import io.weightrelay.api.common.model.Topology;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.control.generation.ManifestMapper;
import io.weightrelay.control.registry.PlacementChecks;
import io.weightrelay.control.registry.PlacementTemplates;
import io.weightrelay.control.registry.Registry;
import io.weightrelay.control.registry.RegistryProblems;
import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.Digests;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The planner's inputs for a generation and a rollout group, from the generation's manifest, its
 * trainer topology and the group's live loader registrations. The plan id needs no fragment: it is
 * the SHA-256 over the manifest digest, the digest of the registrations (workers' headers and
 * template digests) and the topology digest. Templates are read only to check a (manifest,
 * template, buffers) combination this process has not passed yet, and to compute a plan.
 */
final class PlanInputs {

    private final SourceManifest source;
    private final List<Loader> loaders;
    private final Map<String, List<Nic>> nicsByNode;
    private final io.weightrelay.reshard.topology.Topology topology;
    private final String registrationDigest;
    private final String sourceDigest;
    private Map<String, TensorSpec> tensors;

    private PlanInputs(
            SourceManifest source,
            String sourceDigest,
            List<Loader> loaders,
            Map<String, List<Nic>> nicsByNode,
            io.weightrelay.reshard.topology.Topology topology) {
        this.source = source;
        this.loaders = loaders;
        this.nicsByNode = nicsByNode;
        this.topology = topology;
        this.registrationDigest = registrationDigest(loaders);
        this.sourceDigest = sourceDigest;
    }

    SourceManifest source() {
        return source;
    }

    io.weightrelay.reshard.topology.Topology topology() {
        return topology;
    }

    /**
     * The plan id: SHA-256 over the planner's routing version, the manifest, registration and
     * topology digests and the options. The version changes when the planner routes the same inputs
     * differently, so a plan cached by an older control-api is not served again.
     */
    String planId(Planner.Options options) {
        String joined =
                Planner.ROUTING_VERSION
                        + "\n"
                        + sourceDigest
                        + "\n"
                        + registrationDigest
                        + "\n"
                        + topology.digest()
                        + "\n"
                        + options.readMaxBytes()
                        + "\n"
                        + options.batchBytes()
                        + "\n";
        return Digests.sha256Hex(joined.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * @param sourceDigest the manifest's digest as the generation stored it (computing it again
     *     would encode the whole manifest on every request)
     */
    static PlanInputs of(
            SourceManifest source,
            String sourceDigest,
            Topology trainers,
            List<Loader> loaders,
            double defaultGbps) {
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
        List<Node> nodes = new ArrayList<>(ManifestMapper.nodes(trainers, Role.TRAINER));
        nicsByNode.forEach(
                (node, nics) -> nodes.add(ManifestMapper.node(node, nics, Role.ROLLOUT)));
        try {
            return new PlanInputs(
                    source,
                    sourceDigest,
                    loaders,
                    nicsByNode,
                    new io.weightrelay.reshard.topology.Topology(nodes));
        } catch (IllegalArgumentException ex) {
            throw PlanProblems.PLAN_FAILED.exception(ex.getMessage());
        }
    }

    /** What identifies the registered placement: every worker's header and template digest. */
    private static String registrationDigest(List<Loader> loaders) {
        ByteSink out = ByteSink.sha256();
        List<Loader> sorted = new ArrayList<>(loaders);
        sorted.sort(Comparator.comparing(Loader::getInstance));
        out.string("wr.registrations.v1").varInt(sorted.size());
        for (Loader l : sorted) {
            out.string(l.getInstance()).string(l.getNode());
            List<WorkerPlacement> workers = new ArrayList<>(l.getWorkers());
            workers.sort(Comparator.comparing(WorkerPlacement::getWorkerId));
            out.varInt(workers.size());
            for (WorkerPlacement w : workers) {
                out.string(w.getWorkerId()).string(w.getNode()).string(w.getNic());
                out.string(w.getMode().getValue()).string(w.getBuffers().get(0).getSegment());
                out.string(w.getPlacement() == null ? inlineDigest(l, w) : w.getPlacement());
            }
        }
        return out.digestHex();
    }

    private static String inlineDigest(Loader l, WorkerPlacement w) {
        return w.getMode() == ConsumeMode.COMPAT
                ? ""
                : PlacementChecks.template(l.getInstance(), w).digest();
    }

    /**
     * Fails closed before any plan is used: a placement that disagrees with the manifest would
     * write wrong bytes into a worker's weights. Each (manifest, template, buffers) combination is
     * checked once per process; the refusal names instance, worker, tensor and fragment.
     */
    void check(PlacementTemplates templates) {
        Long imageBytes = null;
        for (Loader loader : loaders) {
            for (WorkerPlacement w : loader.getWorkers()) {
                boolean compat = w.getMode() == ConsumeMode.COMPAT;
                String key =
                        (compat ? "compat|" : "plan|")
                                + sourceDigest
                                + "|"
                                + (compat ? "" : w.getPlacement())
                                + "|"
                                + Registry.bufferSizes(w);
                if (w.getPlacement() != null && templates.passed(key)) {
                    continue;
                }
                if (compat && templates.passed(key)) {
                    continue;
                }
                if (compat) {
                    if (imageBytes == null) {
                        imageBytes = SafetensorsLayout.of(source).imageBytes();
                    }
                    PlacementChecks.compatImage(loader.getInstance(), w, imageBytes);
                } else {
                    PlacementChecks.againstManifest(
                            loader.getInstance(), w, template(templates, loader, w), tensors(), 0);
                }
                if (compat || w.getPlacement() != null) {
                    templates.pass(key);
                }
            }
        }
    }

    private static FragmentTemplate template(
            PlacementTemplates templates, Loader loader, WorkerPlacement w) {
        return w.getPlacement() == null
                ? PlacementChecks.template(loader.getInstance(), w)
                : templates.require(w.getPlacement(), loader.getInstance(), w.getWorkerId());
    }

    private Map<String, TensorSpec> tensors() {
        if (tensors == null) {
            tensors = new HashMap<>();
            source.tensors().forEach(t -> tensors.put(t.name(), t));
        }
        return tensors;
    }

    /**
     * The planner's target placement. Workers naming one template share one fragment list, so the
     * placement digest hashes it once and memory holds it once.
     */
    TargetPlacement placement(PlacementTemplates templates) {
        Map<String, List<TargetFragment>> lists = new HashMap<>();
        List<Worker> workers = new ArrayList<>();
        for (Loader loader : loaders) {
            for (WorkerPlacement w : loader.getWorkers()) {
                List<TargetFragment> fragments = List.of();
                if (w.getMode() != ConsumeMode.COMPAT) {
                    FragmentTemplate t = template(templates, loader, w);
                    fragments = lists.computeIfAbsent(t.digest(), d -> fragments(t));
                }
                workers.add(worker(loader.getInstance(), w, fragments));
            }
        }
        try {
            return new TargetPlacement(workers);
        } catch (IllegalArgumentException ex) {
            throw PlanProblems.PLAN_FAILED.exception(ex.getMessage());
        }
    }

    private List<TargetFragment> fragments(FragmentTemplate t) {
        Map<String, TensorSpec> specs = tensors();
        List<TargetFragment> out = new ArrayList<>(t.size());
        for (FragmentTemplate.Entry e : t.entries()) {
            TensorSpec spec = specs.get(e.tensor());
            try {
                out.add(e.typed(spec));
            } catch (IllegalArgumentException ex) {
                throw PlanProblems.PLAN_FAILED.exception(ex.getMessage());
            }
        }
        return List.copyOf(out);
    }

    private Worker worker(String instance, WorkerPlacement w, List<TargetFragment> fragments) {
        List<Nic> nodeNics = nicsByNode.get(w.getNode());
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
}
