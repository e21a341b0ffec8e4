package io.weightrelay.reshard.catalog;

import io.weightrelay.reshard.manifest.Boxes;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The target placement a rollout deployment registers: {@code instances} engine instances of {@code
 * tp} workers each, packed in order onto {@code rolloutNodes} nodes (named as {@link
 * Topology#uniform} names them). Each worker uses the NICs of its slot on the node: with more NICs
 * than workers it stripes over several, with fewer it shares one.
 *
 * <p>In parameter-direct mode each worker holds, per tensor, the box its rank owns, in a buffer
 * named after the parameter at offset 0, dense. Routed experts go whole to rank {@code expert /
 * (experts / ep)} when {@code ep > 1}; with {@code ep == 1} they are tensor-parallel like any MLP.
 */
public final class Placements {
    private Placements() {}

    /**
     * The placement of a catalogued model; see {@link #of(List, int, int, int, int, Mode, int)}.
     */
    public static TargetPlacement of(
            String model,
            int rolloutNodes,
            int instances,
            int tp,
            int ep,
            Mode mode,
            int nicsPerNode) {
        return of(ModelCatalog.layout(model), rolloutNodes, instances, tp, ep, mode, nicsPerNode);
    }

    public static TargetPlacement of(
            List<TensorLayout> layout,
            int rolloutNodes,
            int instances,
            int tp,
            int ep,
            Mode mode,
            int nicsPerNode) {
        if (rolloutNodes < 1 || instances < 1 || tp < 1 || ep < 1 || nicsPerNode < 1) {
            throw new IllegalArgumentException(
                    "nodes, instances, tp, ep and NICs must be positive");
        }
        long total = (long) instances * tp;
        if (total % rolloutNodes != 0) {
            throw new IllegalArgumentException(
                    instances
                            + " instances x tp "
                            + tp
                            + " do not spread evenly over "
                            + rolloutNodes
                            + " nodes");
        }
        if (ep != 1 && ep != tp) {
            throw new IllegalArgumentException(
                    "ep must be 1 or equal to tp (" + tp + "), got " + ep);
        }
        int experts = 0;
        for (TensorLayout t : layout) {
            experts = Math.max(experts, t.expert() + 1);
        }
        if (ep > 1 && experts % ep != 0) {
            throw new IllegalArgumentException(experts + " experts do not split over ep " + ep);
        }
        int perNode = (int) (total / rolloutNodes);
        List<List<TargetFragment>> byRank = new ArrayList<>(tp);
        for (int r = 0; r < tp; r++) {
            byRank.add(mode == Mode.DIRECT ? fragments(layout, r, tp, ep, experts) : List.of());
        }
        List<Worker> workers = new ArrayList<>((int) total);
        for (int i = 0; i < instances; i++) {
            String instance = String.format("i%04d", i);
            for (int r = 0; r < tp; r++) {
                int g = i * tp + r;
                int node = g / perNode;
                int slot = g % perNode;
                int nicFirst;
                int nicCount;
                if (perNode <= nicsPerNode) {
                    nicCount = nicsPerNode / perNode;
                    nicFirst = slot * nicCount;
                } else {
                    nicCount = 1;
                    nicFirst = (int) ((long) slot * nicsPerNode / perNode);
                }
                String id = instance + "-r" + String.format("%03d", r);
                workers.add(
                        new Worker(
                                id,
                                instance,
                                Topology.rolloutNodeName(node),
                                nicFirst,
                                nicCount,
                                mode,
                                id,
                                byRank.get(r)));
            }
        }
        return new TargetPlacement(workers);
    }

    /** The fragments rank {@code rank} of an instance holds. Shared by every instance. */
    static List<TargetFragment> fragments(
            List<TensorLayout> layout, int rank, int tp, int ep, int experts) {
        List<TargetFragment> out = new ArrayList<>();
        Map<Shape, Shape> canonical = new HashMap<>();
        for (TensorLayout t : layout) {
            TensorSpec spec = t.spec();
            Shape shape = spec.shape();
            long[] lo = new long[shape.rank()];
            long[] extent = shape.dims();
            if (t.expert() >= 0 && ep > 1) {
                if (t.expert() / (experts / ep) != rank) {
                    continue;
                }
            } else {
                switch (t.split()) {
                    case REPLICATE -> {}
                    case DIM0 -> evenSlice(lo, extent, 0, shape.dim(0), rank, tp);
                    case DIM1 -> evenSlice(lo, extent, 1, shape.dim(1), rank, tp);
                    case KV_HEADS -> kvSlice(lo, extent, shape.dim(0), rank, tp, t.heads());
                    default -> throw new IllegalStateException();
                }
            }
            Shape boxShape = canonical.computeIfAbsent(new Shape(extent), s -> s);
            Shape strides =
                    canonical.computeIfAbsent(
                            new Shape(
                                    Boxes.contiguousStrides(boxShape, spec.rolloutDtype().bytes())),
                            s -> s);
            Shape offset = canonical.computeIfAbsent(new Shape(lo), s -> s);
            out.add(
                    new TargetFragment(
                            spec.name(),
                            spec.rolloutDtype(),
                            shape,
                            offset,
                            boxShape,
                            spec.name(),
                            0,
                            strides));
        }
        return List.copyOf(out);
    }

    private static void evenSlice(long[] lo, long[] extent, int dim, long size, int rank, int tp) {
        long begin = size * rank / tp;
        long end = size * (rank + 1) / tp;
        lo[dim] = begin;
        extent[dim] = end - begin;
    }

    /** When ranks outnumber key/value heads, each rank holds one whole head, as vLLM does. */
    private static void kvSlice(long[] lo, long[] extent, long rows, int rank, int tp, int heads) {
        if (heads >= tp) {
            evenSlice(lo, extent, 0, rows, rank, tp);
            return;
        }
        long headRows = rows / heads;
        long head = (long) rank * heads / tp;
        lo[0] = head * headRows;
        extent[0] = headRows;
    }
}
