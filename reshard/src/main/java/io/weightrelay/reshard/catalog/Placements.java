package io.weightrelay.reshard.catalog;

import io.weightrelay.reshard.manifest.BlockScales;
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
 * tp * pp} ranks each (stage by stage, {@link Parallelism}), packed in order onto {@code
 * rolloutNodes} nodes (named as {@link Topology#uniform} names them), so an instance of more ranks
 * than a node holds spans consecutive nodes. Each worker uses the NICs of its slot on the node:
 * with more NICs than workers it stripes over several, with fewer it shares one.
 *
 * <p>In parameter-direct mode each worker holds, per tensor, the box its rank owns ({@link
 * Parallelism}), in a buffer named after the parameter at offset 0, dense. A block-FP8 weight's
 * scale tensor ({@link BlockScales}) follows its weight: the rank holds the scale blocks of the
 * weight box it holds. vLLM and SGLang only shard block-FP8 weights on whole 128 x 128 blocks, so a
 * shard that would cut a block is refused, naming the tensor.
 */
public final class Placements {
    private Placements() {}

    /** Instances without data-parallel attention: non-expert weights split over all tp ranks. */
    public static TargetPlacement of(
            List<TensorLayout> layout,
            int rolloutNodes,
            int instances,
            int tp,
            int ep,
            Mode mode,
            int nicsPerNode) {
        return of(
                layout, rolloutNodes, instances, new Parallelism(tp, ep, false), mode, nicsPerNode);
    }

    /** The ranks spread evenly over the nodes: every node holds the same number of them. */
    public static TargetPlacement of(
            List<TensorLayout> layout,
            int rolloutNodes,
            int instances,
            Parallelism parallelism,
            Mode mode,
            int nicsPerNode) {
        if (rolloutNodes < 1 || instances < 1 || nicsPerNode < 1) {
            throw new IllegalArgumentException("nodes, instances and NICs must be positive");
        }
        long total = (long) instances * parallelism.ranks();
        if (total % rolloutNodes != 0) {
            throw new IllegalArgumentException(
                    ranksText(instances, parallelism)
                            + " do not spread evenly over "
                            + rolloutNodes
                            + " nodes");
        }
        return of(
                layout,
                rolloutNodes,
                instances,
                parallelism,
                mode,
                nicsPerNode,
                (int) (total / rolloutNodes));
    }

    /**
     * The ranks packed in order onto nodes of {@code gpusPerNode} ranks each, as a scheduler fills
     * machines: every node but the last is full, and the last holds what remains (an instance may
     * span the boundary when its ranks do not divide a node).
     */
    public static TargetPlacement of(
            List<TensorLayout> layout,
            int rolloutNodes,
            int instances,
            Parallelism parallelism,
            Mode mode,
            int nicsPerNode,
            int gpusPerNode) {
        int tp = parallelism.tp();
        int ep = parallelism.ep();
        int pp = parallelism.pp();
        int ranks = parallelism.ranks();
        if (rolloutNodes < 1 || instances < 1 || nicsPerNode < 1 || gpusPerNode < 1) {
            throw new IllegalArgumentException(
                    "nodes, instances, NICs and GPUs per node must be positive");
        }
        long total = (long) instances * ranks;
        if (total > (long) rolloutNodes * gpusPerNode
                || total <= (long) (rolloutNodes - 1) * gpusPerNode) {
            throw new IllegalArgumentException(
                    ranksText(instances, parallelism)
                            + " fill "
                            + (total + gpusPerNode - 1) / gpusPerNode
                            + " nodes of "
                            + gpusPerNode
                            + " GPUs, not "
                            + rolloutNodes);
        }
        int layers = 0;
        for (TensorLayout t : layout) {
            if (t.layer() != TensorLayout.AFTER_LAYERS) {
                layers = Math.max(layers, t.layer() + 1);
            }
        }
        if (pp > 1 && pp > layers) {
            throw new IllegalArgumentException(
                    "pp "
                            + pp
                            + " is more pipeline stages than the model's "
                            + layers
                            + " decoder layers: every stage needs at least one");
        }
        int experts = 0;
        for (TensorLayout t : layout) {
            experts = Math.max(experts, t.expert() + 1);
        }
        if (ep > 1 && experts % ep != 0) {
            throw new IllegalArgumentException(experts + " experts do not split over ep " + ep);
        }
        int perNode = gpusPerNode;
        List<List<TargetFragment>> byRank = new ArrayList<>(ranks);
        if (mode == Mode.DIRECT) {
            Map<String, Integer> weightOfScale =
                    BlockScales.weightOfScale(layout.stream().map(TensorLayout::spec).toList());
            for (int g = 0; g < ranks; g++) {
                byRank.add(
                        fragments(
                                layout,
                                weightOfScale,
                                g % tp,
                                g / tp,
                                parallelism,
                                experts,
                                layers));
            }
        } else {
            for (int g = 0; g < ranks; g++) {
                byRank.add(List.of());
            }
        }
        List<Worker> workers = new ArrayList<>((int) total);
        for (int i = 0; i < instances; i++) {
            String instance = String.format("i%04d", i);
            for (int r = 0; r < ranks; r++) {
                int g = i * ranks + r;
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

    private static String ranksText(int instances, Parallelism p) {
        return instances + " instances x tp " + p.tp() + (p.pp() > 1 ? " x pp " + p.pp() : "");
    }

    /**
     * The fragments rank {@code rank} of pipeline stage {@code stage} of an instance holds. Shared
     * by every instance.
     */
    static List<TargetFragment> fragments(
            List<TensorLayout> layout,
            Map<String, Integer> weightOfScale,
            int rank,
            int stage,
            Parallelism parallelism,
            int experts,
            int layers) {
        List<TargetFragment> out = new ArrayList<>();
        Map<Shape, Shape> canonical = new HashMap<>();
        for (TensorLayout t : layout) {
            TensorSpec spec = t.spec();
            if (parallelism.pp() > 1 && parallelism.stageOf(t.layer(), layers) != stage) {
                continue;
            }
            Shape[] box;
            Integer weight = weightOfScale.get(spec.name());
            if (weight != null) {
                Shape[] weightBox = box(layout.get(weight), rank, parallelism, experts);
                box = weightBox == null ? null : BlockScales.scaleBox(weightBox[0], weightBox[1]);
            } else {
                box = box(t, rank, parallelism, experts);
                if (box != null && BlockScales.quantized(spec)) {
                    checkWholeBlocks(spec, box, parallelism, rank);
                }
            }
            if (box == null) {
                continue;
            }
            Shape boxShape = canonical.computeIfAbsent(box[1], s -> s);
            Shape strides =
                    canonical.computeIfAbsent(
                            new Shape(
                                    Boxes.contiguousStrides(boxShape, spec.rolloutDtype().bytes())),
                            s -> s);
            Shape offset = canonical.computeIfAbsent(box[0], s -> s);
            out.add(
                    new TargetFragment(
                            spec.name(),
                            spec.rolloutDtype(),
                            spec.shape(),
                            offset,
                            boxShape,
                            spec.name(),
                            0,
                            strides));
        }
        return List.copyOf(out);
    }

    /** {offset, shape} of what {@code rank} holds of {@code t}, or null when it holds none. */
    private static Shape[] box(TensorLayout t, int rank, Parallelism p, int experts) {
        Shape shape = t.spec().shape();
        long[] lo = new long[shape.rank()];
        long[] extent = shape.dims();
        int splitRank = rank;
        int ways = p.tp();
        if (t.expert() >= 0) {
            int group = rank / p.expertTp();
            if (p.ep() > 1 && t.expert() / (experts / p.ep()) != group) {
                return null;
            }
            splitRank = rank % p.expertTp();
            ways = p.expertTp();
        } else if (p.dpAttention()) {
            ways = 1;
        }
        if (ways > 1) {
            switch (t.split()) {
                case REPLICATE -> {}
                case DIM0 -> evenSlice(lo, extent, 0, shape.dim(0), splitRank, ways);
                case DIM1 -> evenSlice(lo, extent, 1, shape.dim(1), splitRank, ways);
                case KV_HEADS -> kvSlice(lo, extent, shape.dim(0), splitRank, ways, t.heads());
                default -> throw new IllegalStateException();
            }
        }
        return new Shape[] {new Shape(lo), new Shape(extent)};
    }

    /** vLLM and SGLang refuse block-FP8 shards that cut a 128 x 128 block; so does the catalog. */
    private static void checkWholeBlocks(TensorSpec spec, Shape[] box, Parallelism p, int rank) {
        for (int d = 0; d < 2; d++) {
            long begin = box[0].dim(d);
            long end = begin + box[1].dim(d);
            long size = spec.shape().dim(d);
            if (begin % BlockScales.BLOCK != 0 || (end % BlockScales.BLOCK != 0 && end != size)) {
                throw new IllegalArgumentException(
                        "tensor "
                                + spec.name()
                                + ": block FP8 shards must be whole 128-element blocks, but with"
                                + " tp "
                                + p.tp()
                                + " and ep "
                                + p.ep()
                                + (p.dpAttention() ? " (dp attention)" : "")
                                + " rank "
                                + rank
                                + " holds elements "
                                + begin
                                + " to "
                                + end
                                + " of its "
                                + size
                                + " along dim "
                                + d
                                + "; choose a tp that splits it on 128-element blocks or keep it in"
                                + " BF16");
            }
        }
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
