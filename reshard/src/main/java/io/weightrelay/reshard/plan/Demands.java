package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.Boxes;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a target placement needs, computed from the inputs alone (per tensor, as unions of boxes in
 * tensor coordinates), never from a plan: the yardsticks plans are measured against.
 *
 * @param storeBytes bytes the whole rollout side needs from the store (each at least once)
 * @param targetStoredBytes bytes the placement stores: direct fragments plus one image per
 *     compatibility worker
 * @param nodeNames rollout node names, as the {@code nodeBytes} index
 * @param nodeBytes per node, the distinct bytes its workers need (each must enter the node once)
 * @param tensorBytes per manifest tensor, the distinct bytes anyone needs of it
 */
public record Demands(
        long storeBytes,
        long targetStoredBytes,
        List<String> nodeNames,
        long[] nodeBytes,
        long[] tensorBytes) {

    public Demands {
        nodeNames = List.copyOf(nodeNames);
        nodeBytes = nodeBytes.clone();
        tensorBytes = tensorBytes.clone();
    }

    @Override
    public long[] nodeBytes() {
        return nodeBytes.clone();
    }

    @Override
    public long[] tensorBytes() {
        return tensorBytes.clone();
    }

    private record Box(Shape offset, Shape shape) {}

    /**
     * Workers that share one fragment list (every instance's rank {@code r}, as registered by
     * template) are counted once per list: the unions are taken over distinct lists, and nodes
     * holding the same set of lists share one result.
     */
    public static Demands of(SourceManifest manifest, TargetPlacement placement) {
        List<TensorSpec> tensors = manifest.tensors();
        Map<String, Integer> tensorIndex = manifest.tensorIndex();
        Map<String, List<Worker>> byNode = new HashMap<>();
        for (Worker w : placement.workers()) {
            byNode.computeIfAbsent(w.node(), k -> new ArrayList<>()).add(w);
        }
        List<String> nodeNames = byNode.keySet().stream().sorted().toList();
        long[] nodeBytes = new long[nodeNames.size()];
        // Distinct fragment lists, by identity, with their boxes per tensor and stored bytes.
        Map<List<TargetFragment>, Integer> listId = new IdentityHashMap<>();
        List<Map<Integer, Set<Box>>> listBoxes = new ArrayList<>();
        List<Long> listBytes = new ArrayList<>();
        Map<Integer, Set<Box>> all = new HashMap<>();
        boolean[] wholeAnywhere = new boolean[tensors.size()];
        long targetStored = 0;
        long modelBytes = manifest.totalBytes();
        Map<List<Integer>, Long> bytesOfListSet = new HashMap<>();
        for (int n = 0; n < nodeNames.size(); n++) {
            boolean whole = false;
            java.util.TreeSet<Integer> lists = new java.util.TreeSet<>();
            for (Worker w : byNode.get(nodeNames.get(n))) {
                if (w.mode() == Mode.COMPAT) {
                    whole = true;
                    targetStored += modelBytes;
                    continue;
                }
                Integer id = listId.get(w.fragments());
                if (id == null) {
                    id = listBoxes.size();
                    listId.put(w.fragments(), id);
                    Map<Integer, Set<Box>> boxes = new HashMap<>();
                    long stored = 0;
                    for (TargetFragment f : w.fragments()) {
                        Integer t = tensorIndex.get(f.tensor());
                        if (t == null) {
                            throw new PlanningException(
                                    "tensor " + f.tensor() + ": not in the source manifest");
                        }
                        stored += f.bytes();
                        Box box = new Box(f.offset(), f.shape());
                        boxes.computeIfAbsent(t, k -> new LinkedHashSet<>()).add(box);
                        all.computeIfAbsent(t, k -> new LinkedHashSet<>()).add(box);
                    }
                    listBoxes.add(boxes);
                    listBytes.add(stored);
                }
                targetStored += listBytes.get(id);
                lists.add(id);
            }
            if (whole) {
                nodeBytes[n] = modelBytes;
                java.util.Arrays.fill(wholeAnywhere, true);
            } else {
                nodeBytes[n] =
                        bytesOfListSet.computeIfAbsent(
                                List.copyOf(lists), set -> unionOfLists(tensors, listBoxes, set));
            }
        }
        long store = 0;
        long[] tensorBytes = new long[tensors.size()];
        for (int t = 0; t < tensors.size(); t++) {
            tensorBytes[t] =
                    wholeAnywhere[t]
                            ? tensors.get(t).bytes()
                            : unionBytes(tensors.get(t), all.getOrDefault(t, Set.of()));
            store += tensorBytes[t];
        }
        return new Demands(store, targetStored, nodeNames, nodeBytes, tensorBytes);
    }

    /** The distinct bytes a node holding these fragment lists needs. */
    private static long unionOfLists(
            List<TensorSpec> tensors, List<Map<Integer, Set<Box>>> listBoxes, List<Integer> set) {
        Map<Integer, Set<Box>> mine = new HashMap<>();
        for (int id : set) {
            listBoxes
                    .get(id)
                    .forEach(
                            (t, boxes) ->
                                    mine.computeIfAbsent(t, k -> new LinkedHashSet<>())
                                            .addAll(boxes));
        }
        long bytes = 0;
        for (Map.Entry<Integer, Set<Box>> e : mine.entrySet()) {
            bytes += unionBytes(tensors.get(e.getKey()), e.getValue());
        }
        return bytes;
    }

    private static long unionBytes(TensorSpec spec, Set<Box> boxes) {
        if (boxes.isEmpty() || spec.bytes() == 0) {
            return 0;
        }
        Shape shape = spec.shape();
        long[] dims = shape.dims();
        List<long[][]> local = new ArrayList<>(boxes.size());
        for (Box b : boxes) {
            long[] lo = b.offset().dims();
            long[] hi = new long[lo.length];
            boolean empty = false;
            for (int d = 0; d < lo.length; d++) {
                hi[d] = lo[d] + b.shape().dim(d);
                empty |= hi[d] == lo[d];
            }
            if (!empty) {
                local.add(new long[][] {lo, hi});
            }
        }
        if (local.isEmpty()) {
            return 0;
        }
        LongList intervals = new LongList(16);
        BoxMath.union(
                local,
                dims,
                Boxes.contiguousStrides(shape, spec.rolloutDtype().bytes()),
                spec.bytes(),
                intervals);
        long bytes = 0;
        for (int k = 0; k < intervals.size(); k += 2) {
            bytes += intervals.get(k + 1) - intervals.get(k);
        }
        return bytes;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Demands d
                && storeBytes == d.storeBytes
                && targetStoredBytes == d.targetStoredBytes
                && nodeNames.equals(d.nodeNames)
                && java.util.Arrays.equals(nodeBytes, d.nodeBytes)
                && java.util.Arrays.equals(tensorBytes, d.tensorBytes);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(storeBytes) * 31 + java.util.Arrays.hashCode(nodeBytes);
    }

    @Override
    public String toString() {
        return "Demands[storeBytes="
                + storeBytes
                + ", targetStoredBytes="
                + targetStoredBytes
                + "]";
    }
}
