package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.Boxes;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.Worker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Who wants what, per tensor: every direct worker is a consumer ("entity"), and so is each node
 * with compatibility workers (one consumer per node, fanned out there, wanting every tensor whole
 * at its safetensors offset). Each distinct target fragment is indexed once, so the instances of a
 * deployment, which share their layout, are planned once; a tensor's demands are (distinct fragment
 * {@code << 32 |} entity), sorted. Checks that each target fragment matches its tensor.
 */
final class DemandIndex {
    private final SourceManifest manifest;
    private final Map<String, Integer> tensorIndex;
    private final Map<String, Integer> bufferIndex = new LinkedHashMap<>();
    private final List<Worker> workers;
    private final int[] wNode;
    private final boolean[] wCompat;

    /** Each stored object's tensor index. */
    final int[] objectTensor;

    final int[] entityWorker;
    final int[] entityNode;
    final int[][] compatOfNode;

    // Demands per tensor, as (distinct fragment << 32 | entity), sorted, so every consumer of
    // the same box is planned once: the instances of a deployment share their layout.
    final int[] demandFirst;
    final long[] demandKey;
    final List<TargetFragment> distinct = new ArrayList<>();
    final IntList distinctBuffer = new IntList(1024);

    DemandIndex(SourceManifest manifest, RolloutWorkers rollout) {
        this.manifest = manifest;
        this.tensorIndex = manifest.tensorIndex();
        this.workers = rollout.workers;
        this.wNode = rollout.wNode;
        this.wCompat = rollout.wCompat;
        this.objectTensor = objectTensors();
        List<TensorSpec> tensors = manifest.tensors();
        int nodes = rollout.nodeCount();
        List<List<Integer>> compat = new ArrayList<>();
        for (int n = 0; n < nodes; n++) {
            compat.add(new ArrayList<>());
        }
        IntList eWorker = new IntList(workers.size() + nodes);
        IntList eNode = new IntList(workers.size() + nodes);
        int[] entityOfWorker = new int[workers.size()];
        for (int w = 0; w < workers.size(); w++) {
            if (wCompat[w]) {
                compat.get(wNode[w]).add(w);
                entityOfWorker[w] = -1;
            } else {
                entityOfWorker[w] = eWorker.size();
                eWorker.add(w);
                eNode.add(wNode[w]);
            }
        }
        int[][] compatOfNode = new int[nodes][];
        IntList groups = new IntList(nodes);
        for (int n = 0; n < nodes; n++) {
            compatOfNode[n] = compat.get(n).stream().mapToInt(Integer::intValue).toArray();
            if (compatOfNode[n].length > 0) {
                groups.add(eWorker.size());
                eWorker.add(-1);
                eNode.add(n);
            }
        }
        this.compatOfNode = compatOfNode;
        entityWorker = eWorker.toArray();
        entityNode = eNode.toArray();

        int[] perTensor = new int[tensors.size() + 1];
        IntList distinctTensor = new IntList(1024);
        Map<TargetFragment, Integer> ids = new IdentityHashMap<>();
        // Every instance of a deployment registers the same fragment list per rank: index each
        // list once.
        Map<List<TargetFragment>, int[]> listIds = new IdentityHashMap<>();
        int[][] idsOfWorker = new int[workers.size()][];
        for (int w = 0; w < workers.size(); w++) {
            List<TargetFragment> fragments = workers.get(w).fragments();
            int[] known = listIds.get(fragments);
            if (known == null) {
                known = new int[fragments.size()];
                for (int k = 0; k < known.length; k++) {
                    TargetFragment f = fragments.get(k);
                    Integer id = ids.get(f);
                    if (id == null) {
                        Integer t = tensorIndex.get(f.tensor());
                        if (t == null) {
                            throw PlanningException.ofTarget(
                                    f.tensor(),
                                    workers.get(w).id(),
                                    "targets a tensor the source manifest does not have");
                        }
                        checkMatches(workers.get(w), f, tensors.get(t));
                        id = distinct.size();
                        ids.put(f, id);
                        distinct.add(f);
                        distinctTensor.add(t);
                        distinctBuffer.add(buffer(f.buffer()));
                    }
                    known[k] = id;
                }
                listIds.put(fragments, known);
            }
            idsOfWorker[w] = known;
            for (int id : known) {
                perTensor[distinctTensor.get(id)]++;
            }
        }
        int[] wholeId = new int[tensors.size()];
        if (groups.size() > 0) {
            SafetensorsLayout layout = SafetensorsLayout.of(manifest);
            int compatBuffer = buffer(Worker.COMPAT_BUFFER);
            for (int t = 0; t < tensors.size(); t++) {
                TensorSpec spec = tensors.get(t);
                wholeId[t] = distinct.size();
                distinct.add(
                        TargetFragment.dense(
                                spec.name(),
                                spec.rolloutDtype(),
                                spec.shape(),
                                Shape.zeros(spec.shape().rank()),
                                spec.shape(),
                                Worker.COMPAT_BUFFER,
                                layout.tensorOffset(t)));
                distinctTensor.add(t);
                distinctBuffer.add(compatBuffer);
                perTensor[t] += groups.size();
            }
        }
        int[] demandFirst = new int[tensors.size() + 1];
        for (int t = 0; t < tensors.size(); t++) {
            demandFirst[t + 1] = demandFirst[t] + perTensor[t];
        }
        long[] demandKey = new long[demandFirst[tensors.size()]];
        int[] fill = Arrays.copyOf(demandFirst, tensors.size());
        for (int w = 0; w < workers.size(); w++) {
            for (int id : idsOfWorker[w]) {
                demandKey[fill[distinctTensor.get(id)]++] = ((long) id << 32) | entityOfWorker[w];
            }
        }
        for (int t = 0; t < tensors.size() && groups.size() > 0; t++) {
            for (int g = 0; g < groups.size(); g++) {
                demandKey[fill[t]++] = ((long) wholeId[t] << 32) | groups.get(g);
            }
        }
        for (int t = 0; t < tensors.size(); t++) {
            Arrays.sort(demandKey, demandFirst[t], demandFirst[t + 1]);
        }
        this.demandFirst = demandFirst;
        this.demandKey = demandKey;
    }

    /** Buffer names in index order. */
    String[] bufferNames() {
        return bufferIndex.keySet().toArray(String[]::new);
    }

    /**
     * Each stored object's tensor index. Fragmenters emit a tensor's fragments together, so the
     * previous object's tensor is tried before the name lookup.
     */
    private int[] objectTensors() {
        List<TensorSpec> tensors = manifest.tensors();
        List<StoredFragment> fragments = manifest.fragments();
        int[] out = new int[fragments.size()];
        int last = -1;
        for (int o = 0; o < out.length; o++) {
            String tensor = fragments.get(o).tensor();
            if (last < 0 || !tensors.get(last).name().equals(tensor)) {
                last = tensorIndex.get(tensor);
            }
            out[o] = last;
        }
        return out;
    }

    private int buffer(String name) {
        return bufferIndex.computeIfAbsent(name, k -> bufferIndex.size());
    }

    private static void checkMatches(Worker worker, TargetFragment f, TensorSpec spec) {
        if (f.dtype() != spec.rolloutDtype()) {
            throw PlanningException.ofTarget(
                    spec.name(),
                    worker.id(),
                    "expects dtype " + f.dtype() + " but the source stores " + spec.rolloutDtype());
        }
        if (!f.tensorShape().equals(spec.shape())) {
            throw PlanningException.ofTarget(
                    spec.name(),
                    worker.id(),
                    "expects shape " + f.tensorShape() + " but the source has " + spec.shape());
        }
        if (!Boxes.inside(f.offset(), f.shape(), spec.shape())) {
            throw PlanningException.ofTarget(
                    spec.name(),
                    worker.id(),
                    "asks for the box at "
                            + f.offset()
                            + " of shape "
                            + f.shape()
                            + ", outside "
                            + spec.shape());
        }
    }
}
