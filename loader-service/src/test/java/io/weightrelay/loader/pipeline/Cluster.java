package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.Boxes;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A lab rollout group built from the catalog: the manifest, the target placement (instances x tp
 * workers packed onto rollout nodes), the plan, and the receive buffers each worker registers.
 */
record Cluster(SourceManifest manifest, TargetPlacement placement, Plan plan) {

    /**
     * The catalog's {@code tiny} model at tp 2 in fragments of at most 256 KiB, planned with reads
     * of 128 KiB to 512 KiB: small enough for many loaders in one test, cut fine enough that every
     * batch has several reads, writes and fan-outs.
     */
    static Cluster tiny(int rolloutNodes, int instances, Mode mode) {
        return of(
                "tiny",
                rolloutNodes,
                instances,
                2,
                mode,
                256 << 10,
                new Planner.Options(128 << 10, 512 << 10));
    }

    private static Cluster of(
            String model,
            int rolloutNodes,
            int instances,
            int tp,
            Mode mode,
            long maxFragmentBytes,
            Planner.Options options) {
        SourceManifest manifest =
                Fragmenter.fragment(model, ModelCatalog.tensors(model), maxFragmentBytes);
        TargetPlacement placement =
                Placements.of(ModelCatalog.layout(model), rolloutNodes, instances, tp, 1, mode, 1);
        Topology topology = Topology.uniform(2, rolloutNodes, 1, 100);
        return new Cluster(
                manifest, placement, Planner.plan(manifest, placement, topology, options));
    }

    /** The buffers every worker registers: one segment per worker, named after it. */
    List<WorkerBuffers> buffers() {
        long image = io.weightrelay.reshard.manifest.SafetensorsLayout.of(manifest).imageBytes();
        List<WorkerBuffers> out = new ArrayList<>();
        for (Worker w : placement.workers()) {
            out.add(new WorkerBuffers(w.id(), buffersOf(w, image)));
        }
        return out;
    }

    static List<BufferSpec> buffersOf(Worker w, long imageBytes) {
        if (w.mode() == Mode.COMPAT) {
            return List.of(new BufferSpec(Worker.COMPAT_BUFFER, w.segment(), imageBytes));
        }
        Map<String, Long> sizes = new LinkedHashMap<>();
        for (TargetFragment f : w.fragments()) {
            long end = f.bufferOffset() + f.dtype().bytes();
            for (int d = 0; d < f.shape().rank(); d++) {
                end += (f.shape().dim(d) - 1) * f.strides().dim(d);
            }
            if (f.shape().numel() == 0) {
                end = f.bufferOffset() + 1;
            }
            sizes.merge(f.buffer(), end, Math::max);
        }
        List<BufferSpec> out = new ArrayList<>();
        sizes.forEach((id, size) -> out.add(new BufferSpec(id, w.segment(), size)));
        return out;
    }

    List<String> instances() {
        return placement.instances();
    }

    List<String> workersOf(String instance) {
        return placement.workers().stream()
                .filter(w -> w.instance().equals(instance))
                .map(Worker::id)
                .toList();
    }

    String nodeOf(String instance) {
        return placement.workers().stream()
                .filter(w -> w.instance().equals(instance))
                .findFirst()
                .orElseThrow()
                .node();
    }

    static long[] contiguous(io.weightrelay.reshard.manifest.Shape shape, int elt) {
        return Boxes.contiguousStrides(shape, elt);
    }
}
