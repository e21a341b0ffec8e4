package io.weightrelay.lab.cluster;

import io.weightrelay.api.common.model.InstanceSpan;
import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Parallelism;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.testkit.sim.SimulatedModel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * What a lab runs for a {@link LabCluster.Spec}, worked out before anything starts: the manifest
 * the simulated trainer publishes, the rollout placement of its engines, the loaders that serve
 * them, and the sizes of the publishers' segments and staging. The local lab and the multi-host lab
 * run the same catalogue.
 */
public final class LabCatalog {

    /** The largest stored object the simulated trainer publishes. */
    public static final long MAX_FRAGMENT = Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES;

    /** The largest batch a lab publisher stages at once. */
    static final long MAX_BATCH = 128L << 20;

    private LabCatalog() {}

    /** What the lab's simulated trainer publishes: every tensor of the catalog model as bf16. */
    public static SourceManifest publishedManifest(String model) {
        return SimulatedModel.manifest(model, DType.BF16, DType.BF16, MAX_FRAGMENT);
    }

    /**
     * What the lab's simulated trainer publishes for {@code spec}: bf16, served in the spec's
     * rollout dtype (block FP8: the selected projections in E4M3, each with its scale tensor).
     */
    public static SourceManifest publishedManifest(LabCluster.Spec spec) {
        return SimulatedModel.manifest(
                spec.model(), DType.BF16, spec.serving().rolloutDtype(), MAX_FRAGMENT);
    }

    /**
     * The rollout placement of {@code spec} for what is actually published: the catalog's splits
     * with the manifest's rollout dtypes, so that every registered stride matches the bytes the
     * workers receive (the catalog keeps some tensors, such as MoE gate biases, in fp32).
     */
    public static TargetPlacement placementFor(SourceManifest manifest, LabCluster.Spec spec) {
        Map<String, TensorSpec> published = new LinkedHashMap<>();
        manifest.tensors().forEach(t -> published.put(t.name(), t));
        List<TensorLayout> catalog = ModelCatalog.layout(spec.model());
        if (spec.serving().rolloutDtype() == DType.F8_E4M3) {
            catalog = ModelCatalog.blockFp8(catalog, Fp8BlockRule.defaults());
        }
        Parallelism parallelism =
                new Parallelism(spec.tp(), spec.serving().ep(), spec.serving().dpAttention());
        List<TensorLayout> layout = new ArrayList<>();
        for (TensorLayout t : catalog) {
            layout.add(t.withSpec(published.get(t.spec().name())));
        }
        if (spec.mode() != null) {
            return Placements.of(
                    layout, spec.rolloutNodes(), spec.instances(), parallelism, spec.mode(), 1);
        }
        // Both modes: each instance's workers from the placement of its own mode (the two list
        // the same workers, instance by instance, on the same nodes and NICs).
        Map<Mode, TargetPlacement> byMode = new LinkedHashMap<>();
        for (Mode m : Mode.values()) {
            byMode.put(
                    m,
                    Placements.of(
                            layout, spec.rolloutNodes(), spec.instances(), parallelism, m, 1));
        }
        List<String> instances = byMode.get(Mode.COMPAT).instances();
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < byMode.get(Mode.COMPAT).workers().size(); i++) {
            String instance = byMode.get(Mode.COMPAT).workers().get(i).instance();
            workers.add(byMode.get(spec.modeOf(instances.indexOf(instance))).workers().get(i));
        }
        return new TargetPlacement(workers);
    }

    /**
     * One loader of the lab: an engine instance all on one node has one, named after it; an
     * instance that spans nodes has one on each of its nodes, named {@code <instance>-<node>},
     * registering that node's ranks and the instance it serves part of.
     *
     * @param id the loader's id (its registration's instance id)
     * @param rolloutInstance the engine instance it serves (all or one node of)
     * @param node its node
     * @param nodes how many nodes the instance spans
     */
    public record LoaderSlot(String id, String rolloutInstance, String node, int nodes) {

        /** What the loader registers as its span, or null for an instance on one node. */
        public InstanceSpan span() {
            return nodes == 1
                    ? null
                    : new InstanceSpan().rolloutInstance(rolloutInstance).nodes(nodes);
        }
    }

    /** The loaders of {@code placement}, instance by instance, each instance's nodes in order. */
    public static List<LoaderSlot> loaderSlots(TargetPlacement placement) {
        Map<String, SortedSet<String>> nodes = new LinkedHashMap<>();
        for (Worker w : placement.workers()) {
            nodes.computeIfAbsent(w.instance(), i -> new TreeSet<>()).add(w.node());
        }
        List<LoaderSlot> out = new ArrayList<>();
        nodes.forEach(
                (instance, on) -> {
                    for (String node : on) {
                        String id = on.size() == 1 ? instance : instance + "-" + node;
                        out.add(new LoaderSlot(id, instance, node, on.size()));
                    }
                });
        return out;
    }

    /**
     * The segment and staging bytes of each publisher of a lab with {@code trainerNodes} nodes:
     * staging lives in the segment (ranks write where the objects will live), so the segment holds
     * the active generation plus everything staged for the next one.
     */
    static long[] publisherSizes(SourceManifest manifest, int trainerNodes) {
        List<Node> trainers = new ArrayList<>();
        for (int i = 0; i < trainerNodes; i++) {
            trainers.add(new Node(Topology.trainerNodeName(i), Role.TRAINER, 1, 100));
        }
        long maxNodeBytes = 0;
        for (long b : PublisherAssignment.assign(manifest, new Topology(trainers)).bytesPerNode()) {
            maxNodeBytes = Math.max(maxNodeBytes, b);
        }
        long staging = roundUp(maxNodeBytes + (64L << 20) + MAX_BATCH);
        long segment = roundUp(maxNodeBytes + staging + (64L << 20));
        return new long[] {segment, staging};
    }

    /** {@code bytes} rounded up to whole MiB (what a segment or staging area is sized in). */
    public static long roundUp(long bytes) {
        long mib = 1L << 20;
        return (bytes + mib - 1) / mib * mib;
    }
}
