package io.weightrelay.lab.bench;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.ModelConfig;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The deployment a {@code bench control-plane} run plays: a catalogued model's manifest (scaled to
 * a tensor count when asked) and the rollout placement of its instances, as their engines register
 * it.
 */
record Scenario(
        String model,
        String synthetic,
        SourceManifest manifest,
        TargetPlacement placement,
        Mode mode,
        int trainerNodes,
        int instances,
        int tp,
        int ep,
        int rolloutNodes) {

    /** The one receive buffer of a bench direct worker, holding all its boxes. */
    static final String WEIGHTS = "weights";

    /** The trainer's fragment size, as the publishers cut tensors. */
    static final long MAX_FRAGMENT = Fragmenter.DEFAULT_MAX_FRAGMENT_BYTES;

    /**
     * The deployment {@code bench} describes, its model scaled to about {@code tensors} tensors (0:
     * whole). {@code bench}'s {@code ep} 0 is {@code bench planner}'s default ({@code tp} for MoE
     * models, every expert whole on one rank as MoE deployments run; 1 for dense ones).
     *
     * @param prefix put before the model's name ("" for none), so a warm-up run shares no key with
     *     the measured one
     */
    static Scenario of(String prefix, ControlPlaneBench.Options bench, int tensors) {
        String catalogued = bench.model();
        ModelConfig config = ModelCatalog.config(catalogued);
        String synthetic = null;
        String model = catalogued;
        int tp = bench.tp();
        int ep = bench.ep() > 0 ? bench.ep() : config.isMoe() ? tp : 1;
        if (tensors > 0) {
            config = scaled(config, tensors, ep);
            synthetic =
                    catalogued
                            + " scaled to "
                            + config.layers()
                            + " layers and "
                            + config.moe().experts()
                            + " experts";
            model = catalogued + "-t" + tensors;
        }
        model = prefix + model;
        List<TensorLayout> catalog = ModelCatalog.layout(config);
        // What the lab's simulated trainer publishes: every tensor as bf16.
        List<TensorSpec> specs = new ArrayList<>();
        for (TensorLayout t : catalog) {
            specs.add(new TensorSpec(t.spec().name(), t.spec().shape(), DType.BF16, DType.BF16));
        }
        SourceManifest manifest = Fragmenter.fragment(model, specs, MAX_FRAGMENT);
        List<TensorLayout> layout = new ArrayList<>();
        for (int i = 0; i < catalog.size(); i++) {
            TensorLayout t = catalog.get(i);
            layout.add(t.withSpec(specs.get(i)));
        }
        TargetPlacement placement =
                packed(
                        Placements.of(
                                layout,
                                bench.rolloutNodes(),
                                bench.instances(),
                                tp,
                                ep,
                                bench.mode(),
                                1));
        return new Scenario(
                model,
                synthetic,
                manifest,
                placement,
                bench.mode(),
                bench.trainerNodes(),
                bench.instances(),
                tp,
                ep,
                bench.rolloutNodes());
    }

    /**
     * The placement as an engine registers it: each direct worker's boxes back to back in one
     * buffer ({@value #WEIGHTS}), as dense as the catalogue lays them out. Workers of one rank keep
     * sharing one fragment list (one template).
     */
    static TargetPlacement packed(TargetPlacement placement) {
        Map<
                        List<io.weightrelay.reshard.placement.TargetFragment>,
                        List<io.weightrelay.reshard.placement.TargetFragment>>
                lists = new java.util.IdentityHashMap<>();
        List<Worker> out = new ArrayList<>();
        for (Worker w : placement.workers()) {
            List<io.weightrelay.reshard.placement.TargetFragment> fragments =
                    lists.computeIfAbsent(w.fragments(), Scenario::packed);
            out.add(w.withFragments(fragments));
        }
        return new TargetPlacement(out);
    }

    private static List<io.weightrelay.reshard.placement.TargetFragment> packed(
            List<io.weightrelay.reshard.placement.TargetFragment> fragments) {
        List<io.weightrelay.reshard.placement.TargetFragment> out =
                new ArrayList<>(fragments.size());
        long cursor = 0;
        for (io.weightrelay.reshard.placement.TargetFragment f : fragments) {
            out.add(
                    new io.weightrelay.reshard.placement.TargetFragment(
                            f.tensor(),
                            f.dtype(),
                            f.tensorShape(),
                            f.offset(),
                            f.shape(),
                            WEIGHTS,
                            cursor,
                            f.strides()));
            cursor = (cursor + Math.max(1, f.bufferEnd() - f.bufferOffset()) + 255) / 256 * 256;
        }
        return List.copyOf(out);
    }

    List<Worker> workersOf(String instance) {
        return placement.workers().stream().filter(w -> w.instance().equals(instance)).toList();
    }

    /**
     * The catalogued model with fewer layers (and, below two layers' worth, fewer experts) so that
     * it has about {@code tensors} tensors: the per-layer count is affine in the layers and the
     * experts, so two probes give the layers and a bisection the experts (a multiple of {@code ep},
     * so that they split over the expert-parallel ranks).
     */
    static ModelConfig scaled(ModelConfig c, int tensors, int ep) {
        int first = Math.max(1, c.moe().firstDenseLayers()) + 1;
        int atFirst = ModelCatalog.layout(withSize(c, first, c.moe().experts())).size();
        int perLayer =
                ModelCatalog.layout(withSize(c, first + 1, c.moe().experts())).size() - atFirst;
        int layers = first;
        if (tensors > atFirst && perLayer > 0) {
            layers = first + (int) Math.round((tensors - atFirst) / (double) perLayer);
        }
        layers = Math.max(first, Math.min(c.layers(), layers));
        int lo = 1;
        int hi = c.isMoe() ? c.moe().experts() : 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (ModelCatalog.layout(withSize(c, layers, mid)).size() <= tensors) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return withSize(c, layers, c.isMoe() ? Math.max(ep, lo / ep * ep) : 0);
    }

    private static ModelConfig withSize(ModelConfig c, int layers, int experts) {
        return new ModelConfig(
                c.name(),
                c.vocab(),
                c.hidden(),
                c.intermediate(),
                layers,
                c.tiedEmbeddings(),
                c.attention(),
                c.moe().withExperts(experts),
                c.mla());
    }
}
