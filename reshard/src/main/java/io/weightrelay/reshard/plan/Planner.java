package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.manifest.Boxes;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Computes the routing plan, a pure function of (source manifest, target placement, topology):
 *
 * <ol>
 *   <li>every consumer's demand is intersected with every stored fragment as N-D boxes;
 *       compatibility workers are grouped per node (one consumer per node, fanned out there);
 *   <li>each object is cut along dim 0 at demand boundaries and at most {@code readMaxBytes} into
 *       reads whose ranges are the union of the demanded bytes (bytes nobody wants are never read);
 *   <li>each read gets one reader, largest first onto the worker whose NICs end least loaded
 *       ({@code bytes read + bytes pushed to other nodes}), preferring a consumer of the read;
 *   <li>each remote compatibility node gets one write into a delegate chosen by least NIC ingress;
 *   <li>each reader's reads are packed in object order into batches of at most {@code batchBytes}
 *       of staging.
 * </ol>
 */
public final class Planner {
    /**
     * @param readMaxBytes upper bound of one read's span (unless a single dim-0 row is larger)
     * @param batchBytes staging bytes one reader fills per batch
     */
    public record Options(long readMaxBytes, long batchBytes) {
        public static final Options DEFAULT = new Options(16L << 20, 64L << 20);

        public Options {
            if (readMaxBytes <= 0 || batchBytes < readMaxBytes) {
                throw new IllegalArgumentException("need 0 < readMaxBytes <= batchBytes");
            }
        }
    }

    private Planner() {}

    public static Plan plan(SourceManifest manifest, TargetPlacement placement, Topology topology) {
        return plan(manifest, placement, topology, Options.DEFAULT);
    }

    public static Plan plan(
            SourceManifest manifest,
            TargetPlacement placement,
            Topology topology,
            Options options) {
        return new Planning(manifest, placement, topology, options).plan();
    }

    /** One planning run's working state. */
    private static final class Planning {
        private final SourceManifest manifest;
        private final TargetPlacement placement;
        private final Topology topology;
        private final Options options;

        private List<Node> rollout;
        private int[] nicBase;
        private int totalNics;
        private List<Worker> workers;
        private int[] wNode;
        private int[] wNicFirst;
        private int[] wNicCount;
        private boolean[] wCompat;
        private final Map<String, Integer> bufferIndex = new LinkedHashMap<>();
        private Map<String, Integer> tensorIndex;
        private int[] objectTensor;

        private int[] entityWorker;
        private int[] entityNode;
        private int[][] compatOfNode;

        // Demands per tensor, as (distinct fragment << 32 | entity), sorted, so every consumer of
        // the same box is planned once: the instances of a deployment share their layout.
        private int[] demandFirst;
        private long[] demandKey;
        private final List<TargetFragment> distinct = new ArrayList<>();
        private final IntList distinctBuffer = new IntList(1024);

        // Reads and their runs, before readers are known.
        private final IntList readObject = new IntList(1024);
        private final LongList readStart = new LongList(1024);
        private final LongList readSpan = new LongList(1024);
        private final IntList readRangeFirst = new IntList(1024);
        private final LongList rangeStart = new LongList(1024);
        private final LongList rangeLength = new LongList(1024);
        private final IntList readRunFirst = new IntList(1024);
        private IntList runEntity;
        private IntList runBuffer;
        private LongList runSrc;
        private LongList runDst;
        private LongList runLength;
        private LongList runBytes;
        private IntList runLoopFirst;
        private final LongList loopCount = new LongList(256);
        private final LongList loopSrc = new LongList(256);
        private final LongList loopDst = new LongList(256);

        Planning(
                SourceManifest manifest,
                TargetPlacement placement,
                Topology topology,
                Options options) {
            this.manifest = manifest;
            this.placement = placement;
            this.topology = topology;
            this.options = options;
        }

        Plan plan() {
            PublisherAssignment assignment = PublisherAssignment.assign(manifest, topology);
            tensorIndex = manifest.tensorIndex();
            objectTensor = objectTensors();
            indexNodesAndWorkers();
            indexDemands();
            cutReads();
            int reads = readObject.size();
            int[] reader = new int[reads];
            int[] dst = new int[runEntity.size()];
            assignReaders(reader, dst);
            int[] batch = new int[reads];
            long[] staging = new long[reads];
            int batchCount = batches(reader, batch, staging);
            return build(assignment, reader, dst, batch, staging, batchCount);
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

        private void indexNodesAndWorkers() {
            rollout = topology.nodes(Role.ROLLOUT);
            Map<String, Integer> nodeIndex = new HashMap<>();
            nicBase = new int[rollout.size()];
            for (int n = 0; n < rollout.size(); n++) {
                nodeIndex.put(rollout.get(n).name(), n);
                nicBase[n] = totalNics;
                totalNics += rollout.get(n).nics();
            }
            workers = placement.workers();
            int count = workers.size();
            wNode = new int[count];
            wNicFirst = new int[count];
            wNicCount = new int[count];
            wCompat = new boolean[count];
            for (int w = 0; w < count; w++) {
                Worker worker = workers.get(w);
                Integer node = nodeIndex.get(worker.node());
                if (node == null) {
                    throw new PlanningException(
                            "worker "
                                    + worker.id()
                                    + ": node "
                                    + worker.node()
                                    + " is not a rollout node of the topology");
                }
                if (worker.nicFirst() + worker.nicCount() > rollout.get(node).nics()) {
                    throw new PlanningException(
                            "worker "
                                    + worker.id()
                                    + ": NICs beyond the "
                                    + rollout.get(node).nics()
                                    + " of node "
                                    + worker.node());
                }
                wNode[w] = node;
                wNicFirst[w] = nicBase[node] + worker.nicFirst();
                wNicCount[w] = worker.nicCount();
                wCompat[w] = worker.mode() == Mode.COMPAT;
            }
        }

        private int buffer(String name) {
            return bufferIndex.computeIfAbsent(name, k -> bufferIndex.size());
        }

        private void indexDemands() {
            List<TensorSpec> tensors = manifest.tensors();
            int nodes = rollout.size();
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
            compatOfNode = new int[nodes][];
            IntList groups = new IntList(nodes);
            for (int n = 0; n < nodes; n++) {
                compatOfNode[n] = compat.get(n).stream().mapToInt(Integer::intValue).toArray();
                if (compatOfNode[n].length > 0) {
                    groups.add(eWorker.size());
                    eWorker.add(-1);
                    eNode.add(n);
                }
            }
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
                                throw new PlanningException(
                                        "tensor "
                                                + f.tensor()
                                                + ": worker "
                                                + workers.get(w).id()
                                                + " targets a tensor the source manifest does not"
                                                + " have");
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
            demandFirst = new int[tensors.size() + 1];
            for (int t = 0; t < tensors.size(); t++) {
                demandFirst[t + 1] = demandFirst[t] + perTensor[t];
            }
            demandKey = new long[demandFirst[tensors.size()]];
            int[] fill = Arrays.copyOf(demandFirst, tensors.size());
            for (int w = 0; w < workers.size(); w++) {
                for (int id : idsOfWorker[w]) {
                    demandKey[fill[distinctTensor.get(id)]++] =
                            ((long) id << 32) | entityOfWorker[w];
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
        }

        private static void checkMatches(Worker worker, TargetFragment f, TensorSpec spec) {
            if (f.dtype() != spec.rolloutDtype()) {
                throw new PlanningException(
                        "tensor "
                                + spec.name()
                                + ": worker "
                                + worker.id()
                                + " expects dtype "
                                + f.dtype()
                                + " but the source stores "
                                + spec.rolloutDtype());
            }
            if (!f.tensorShape().equals(spec.shape())) {
                throw new PlanningException(
                        "tensor "
                                + spec.name()
                                + ": worker "
                                + worker.id()
                                + " expects shape "
                                + f.tensorShape()
                                + " but the source has "
                                + spec.shape());
            }
            if (!Boxes.inside(f.offset(), f.shape(), spec.shape())) {
                throw new PlanningException(
                        "tensor "
                                + spec.name()
                                + ": worker "
                                + worker.id()
                                + " asks for the box at "
                                + f.offset()
                                + " of shape "
                                + f.shape()
                                + ", outside "
                                + spec.shape());
            }
        }

        private void cutReads() {
            // Most demands meet one or two stored fragments: size the run columns once.
            int expected = (int) Math.min(Integer.MAX_VALUE - 16, 2L * demandKey.length + 1024);
            runEntity = new IntList(expected);
            runBuffer = new IntList(expected);
            runLoopFirst = new IntList(expected);
            runSrc = new LongList(expected);
            runDst = new LongList(expected);
            runLength = new LongList(expected);
            runBytes = new LongList(expected);
            List<StoredFragment> fragments = manifest.fragments();
            List<long[]> hitLo = new ArrayList<>();
            List<long[]> hitHi = new ArrayList<>();
            IntList hitDemand = new IntList(64);
            List<long[][]> boxes = new ArrayList<>();
            LongList ranges = new LongList(16);
            long[] run = new long[3];
            for (int f = 0; f < fragments.size(); f++) {
                StoredFragment sf = fragments.get(f);
                if (sf.bytes() == 0) {
                    continue;
                }
                int t = objectTensor[f];
                int elt = manifest.tensors().get(t).rolloutDtype().bytes();
                int rank = sf.shape().rank();
                long[] sOff = sf.offset().dims();
                long[] sShape = sf.shape().dims();
                long[] sStride = Boxes.contiguousStrides(sf.shape(), elt);
                hitLo.clear();
                hitHi.clear();
                hitDemand.clear();
                for (int d = demandFirst[t]; d < demandFirst[t + 1]; ) {
                    int group = d;
                    int id = (int) (demandKey[d] >>> 32);
                    while (d < demandFirst[t + 1] && (int) (demandKey[d] >>> 32) == id) {
                        d++;
                    }
                    TargetFragment tf = distinct.get(id);
                    long[] lo = new long[rank];
                    long[] hi = new long[rank];
                    boolean empty = false;
                    for (int k = 0; k < rank && !empty; k++) {
                        lo[k] = Math.max(sOff[k], tf.offset().dim(k));
                        hi[k] =
                                Math.min(
                                        sOff[k] + sShape[k],
                                        tf.offset().dim(k) + tf.shape().dim(k));
                        empty = lo[k] >= hi[k];
                    }
                    if (!empty) {
                        hitLo.add(lo);
                        hitHi.add(hi);
                        hitDemand.add(group);
                        hitDemand.add(d);
                    }
                }
                int hits = hitLo.size();
                if (hits == 0) {
                    continue;
                }
                if (rank == 0) {
                    addRead(f, sf, sOff, sStride, elt, hitLo, hitHi, hitDemand, null, 0, 0, run);
                    continue;
                }
                long[] cuts = new long[2 + 2 * hits];
                cuts[0] = sOff[0];
                cuts[1] = sOff[0] + sShape[0];
                for (int h = 0; h < hits; h++) {
                    cuts[2 + 2 * h] = hitLo.get(h)[0];
                    cuts[3 + 2 * h] = hitHi.get(h)[0];
                }
                Arrays.sort(cuts);
                long rowsPerRead = Math.max(1, options.readMaxBytes() / sStride[0]);
                for (int c = 0; c + 1 < cuts.length; c++) {
                    long a = cuts[c];
                    long b = cuts[c + 1];
                    for (long r = a; r < b; r += rowsPerRead) {
                        long rEnd = Math.min(b, r + rowsPerRead);
                        boxes.clear();
                        for (int h = 0; h < hits; h++) {
                            if (hitLo.get(h)[0] <= r && hitHi.get(h)[0] >= rEnd) {
                                long[] lo = new long[rank];
                                long[] hi = new long[rank];
                                for (int k = 0; k < rank; k++) {
                                    lo[k] = hitLo.get(h)[k] - sOff[k];
                                    hi[k] = hitHi.get(h)[k] - sOff[k];
                                }
                                lo[0] = r - sOff[0];
                                hi[0] = rEnd - sOff[0];
                                boxes.add(new long[][] {lo, hi});
                            }
                        }
                        if (boxes.isEmpty()) {
                            continue;
                        }
                        ranges.clear();
                        BoxMath.union(boxes, sShape, sStride, sf.bytes(), ranges);
                        addRead(
                                f, sf, sOff, sStride, elt, hitLo, hitHi, hitDemand, ranges, r, rEnd,
                                run);
                    }
                }
            }
            readRangeFirst.add(rangeStart.size());
            readRunFirst.add(runEntity.size());
            runLoopFirst.add(loopCount.size());
        }

        private void addRead(
                int object,
                StoredFragment sf,
                long[] sOff,
                long[] sStride,
                int elt,
                List<long[]> hitLo,
                List<long[]> hitHi,
                IntList hitDemand,
                LongList ranges,
                long rowLo,
                long rowHi,
                long[] run) {
            long spanStart;
            long spanEnd;
            readRangeFirst.add(rangeStart.size());
            readRunFirst.add(runEntity.size());
            if (ranges == null) {
                spanStart = 0;
                spanEnd = sf.bytes();
                rangeStart.add(0);
                rangeLength.add(sf.bytes());
            } else {
                spanStart = ranges.get(0);
                spanEnd = ranges.get(ranges.size() - 1);
                for (int k = 0; k < ranges.size(); k += 2) {
                    rangeStart.add(ranges.get(k));
                    rangeLength.add(ranges.get(k + 1) - ranges.get(k));
                }
            }
            readObject.add(object);
            readStart.add(spanStart);
            readSpan.add(spanEnd - spanStart);
            int rank = sOff.length;
            long[] tOff = new long[rank];
            long[] tStride = new long[rank];
            for (int h = 0; h < hitLo.size(); h++) {
                long[] lo = hitLo.get(h);
                long[] hi = hitHi.get(h);
                if (rank > 0) {
                    if (lo[0] > rowLo || hi[0] < rowHi) {
                        continue;
                    }
                    lo = lo.clone();
                    hi = hi.clone();
                    lo[0] = rowLo;
                    hi[0] = rowHi;
                }
                int groupStart = hitDemand.get(2 * h);
                int groupEnd = hitDemand.get(2 * h + 1);
                int id = (int) (demandKey[groupStart] >>> 32);
                TargetFragment tf = distinct.get(id);
                for (int k = 0; k < rank; k++) {
                    tOff[k] = tf.offset().dim(k);
                    tStride[k] = tf.strides().dim(k);
                }
                int loopStart = loopCount.size();
                int loops =
                        BoxMath.lower(
                                sOff,
                                sStride,
                                lo,
                                hi,
                                tOff,
                                tStride,
                                tf.bufferOffset(),
                                elt,
                                run,
                                loopCount,
                                loopSrc,
                                loopDst);
                long bytes = run[2];
                for (int l = loopStart; l < loopStart + loops; l++) {
                    bytes *= loopCount.get(l);
                }
                for (int d = groupStart; d < groupEnd; d++) {
                    if (d > groupStart) {
                        for (int l = loopStart; l < loopStart + loops; l++) {
                            loopCount.add(loopCount.get(l));
                            loopSrc.add(loopSrc.get(l));
                            loopDst.add(loopDst.get(l));
                        }
                    }
                    runLoopFirst.add(loopCount.size() - loops);
                    runEntity.add((int) demandKey[d]);
                    runBuffer.add(distinctBuffer.get(id));
                    runSrc.add(run[0] - spanStart);
                    runDst.add(run[1]);
                    runLength.add(run[2]);
                    runBytes.add(bytes);
                }
            }
        }

        private double loadOf(double[] load, int worker) {
            double max = 0;
            for (int n = wNicFirst[worker]; n < wNicFirst[worker] + wNicCount[worker]; n++) {
                max = Math.max(max, load[n]);
            }
            return max;
        }

        private void addLoad(double[] load, int worker, double bytes) {
            double share = bytes / wNicCount[worker];
            for (int n = wNicFirst[worker]; n < wNicFirst[worker] + wNicCount[worker]; n++) {
                load[n] += share;
            }
        }

        private void assignReaders(int[] reader, int[] dst) {
            int reads = readObject.size();
            int nodes = rollout.size();
            int workerCount = workers.size();
            if (reads > 0 && workerCount == 0) {
                throw new PlanningException("no worker to read with");
            }
            long[] readBytes = new long[reads];
            long[] demand = new long[reads];
            Integer[] order = new Integer[reads];
            for (int i = 0; i < reads; i++) {
                for (int r = readRangeFirst.get(i); r < readRangeFirst.get(i + 1); r++) {
                    readBytes[i] += rangeLength.get(r);
                }
                for (int r = readRunFirst.get(i); r < readRunFirst.get(i + 1); r++) {
                    demand[i] += runBytes.get(r);
                }
                order[i] = i;
            }
            Arrays.sort(
                    order,
                    (a, b) -> {
                        long ka = readBytes[a] + demand[a];
                        long kb = readBytes[b] + demand[b];
                        return ka != kb ? Long.compare(kb, ka) : Integer.compare(a, b);
                    });
            double[] nicLoad = new double[totalNics];
            double[] nicIn = new double[totalNics];
            long[] nodeDemand = new long[nodes];
            double[] nodeCost = new double[nodes];
            int[] workerStamp = new int[workerCount];
            int[] groupStamp = new int[nodes];
            workerLoad = new double[workerCount];
            int[][] sharing = workersSharingNics();
            indexNodeWorkers();
            for (int i : order) {
                int stamp = i + 1;
                Arrays.fill(nodeDemand, 0);
                for (int r = readRunFirst.get(i); r < readRunFirst.get(i + 1); r++) {
                    int e = runEntity.get(r);
                    nodeDemand[entityNode[e]] += runBytes.get(r);
                    if (entityWorker[e] >= 0) {
                        workerStamp[entityWorker[e]] = stamp;
                    } else {
                        groupStamp[entityNode[e]] = stamp;
                    }
                }
                for (int n = 0; n < nodes; n++) {
                    nodeCost[n] = readBytes[i] + demand[i] - nodeDemand[n];
                }
                best = -1;
                bestScore = Double.MAX_VALUE;
                for (int n = 0; n < nodes; n++) {
                    if (!uniformNics[n]) {
                        for (int w : workersOfNode[n]) {
                            consider(
                                    w,
                                    i,
                                    stamp,
                                    nodeCost[n],
                                    readBytes[i],
                                    workerStamp,
                                    groupStamp);
                        }
                        continue;
                    }
                    // With equal NIC counts on a node, a worker's score is its load plus a
                    // node-wide term: the node's best is its least-loaded worker, or its
                    // least-loaded consumer (direct consumers are visited below).
                    if (minAll[n] >= 0) {
                        consider(
                                minAll[n],
                                i,
                                stamp,
                                nodeCost[n],
                                readBytes[i],
                                workerStamp,
                                groupStamp);
                    }
                    if (groupStamp[n] == stamp && minCompat[n] >= 0) {
                        consider(
                                minCompat[n],
                                i,
                                stamp,
                                nodeCost[n],
                                readBytes[i],
                                workerStamp,
                                groupStamp);
                    }
                }
                for (int r = readRunFirst.get(i); r < readRunFirst.get(i + 1); r++) {
                    int w = entityWorker[runEntity.get(r)];
                    if (w >= 0 && uniformNics[wNode[w]]) {
                        consider(
                                w,
                                i,
                                stamp,
                                nodeCost[wNode[w]],
                                readBytes[i],
                                workerStamp,
                                groupStamp);
                    }
                }
                reader[i] = best;
                int readerNode = wNode[best];
                addLoad(nicLoad, best, readBytes[i] + demand[i] - nodeDemand[readerNode]);
                for (int w : sharing[best]) {
                    workerLoad[w] = loadOf(nicLoad, w);
                }
                refreshMinima(readerNode);
                addLoad(nicIn, best, readBytes[i]);
                for (int r = readRunFirst.get(i); r < readRunFirst.get(i + 1); r++) {
                    int e = runEntity.get(r);
                    int node = entityNode[e];
                    int target;
                    if (entityWorker[e] >= 0) {
                        target = entityWorker[e];
                    } else if (node == readerNode) {
                        int[] local = compatOfNode[node];
                        target = wCompat[best] ? best : local[i % local.length];
                    } else {
                        target = leastIngress(nicIn, compatOfNode[node]);
                    }
                    if (node != readerNode) {
                        addLoad(nicIn, target, runBytes.get(r));
                    }
                    dst[r] = target;
                }
            }
        }

        // Reader choice: the best (lowest score, then lowest index) candidate so far.
        private int best;
        private double bestScore;
        private double[] workerLoad;
        private int[][] workersOfNode;
        private boolean[] uniformNics;
        private int[] minAll;
        private int[] minCompat;

        private void consider(
                int w,
                int read,
                int stamp,
                double nodeCost,
                long readBytes,
                int[] workerStamp,
                int[] groupStamp) {
            boolean consumer =
                    workerStamp[w] == stamp || (wCompat[w] && groupStamp[wNode[w]] == stamp);
            // A reader that does not consume the read lands bytes it has no use for on its NIC:
            // charge them once more, so consumers win unless clearly busier.
            double share = nodeCost + (consumer ? 0 : readBytes);
            double score = workerLoad[w] + share / wNicCount[w];
            if (score < bestScore || (score == bestScore && w < best)) {
                bestScore = score;
                best = w;
            }
        }

        private void indexNodeWorkers() {
            int nodes = rollout.size();
            List<List<Integer>> byNode = new ArrayList<>(nodes);
            for (int n = 0; n < nodes; n++) {
                byNode.add(new ArrayList<>());
            }
            for (int w = 0; w < workers.size(); w++) {
                byNode.get(wNode[w]).add(w);
            }
            workersOfNode = new int[nodes][];
            uniformNics = new boolean[nodes];
            minAll = new int[nodes];
            minCompat = new int[nodes];
            for (int n = 0; n < nodes; n++) {
                workersOfNode[n] = byNode.get(n).stream().mapToInt(Integer::intValue).toArray();
                uniformNics[n] = true;
                for (int w : workersOfNode[n]) {
                    uniformNics[n] &= wNicCount[w] == wNicCount[workersOfNode[n][0]];
                }
                refreshMinima(n);
            }
        }

        /** Least-loaded worker and least-loaded compatibility worker of a node (lowest index). */
        private void refreshMinima(int node) {
            int all = -1;
            int compat = -1;
            for (int w : workersOfNode[node]) {
                if (all < 0 || workerLoad[w] < workerLoad[all]) {
                    all = w;
                }
                if (wCompat[w] && (compat < 0 || workerLoad[w] < workerLoad[compat])) {
                    compat = w;
                }
            }
            minAll[node] = all;
            minCompat[node] = compat;
        }

        /** For each worker, the workers (itself included) that use any of its NICs. */
        private int[][] workersSharingNics() {
            List<List<Integer>> onNic = new ArrayList<>(totalNics);
            for (int n = 0; n < totalNics; n++) {
                onNic.add(new ArrayList<>(1));
            }
            for (int w = 0; w < workers.size(); w++) {
                for (int n = wNicFirst[w]; n < wNicFirst[w] + wNicCount[w]; n++) {
                    onNic.get(n).add(w);
                }
            }
            int[][] sharing = new int[workers.size()][];
            for (int w = 0; w < workers.size(); w++) {
                TreeSet<Integer> set = new TreeSet<>();
                for (int n = wNicFirst[w]; n < wNicFirst[w] + wNicCount[w]; n++) {
                    set.addAll(onNic.get(n));
                }
                sharing[w] = set.stream().mapToInt(Integer::intValue).toArray();
            }
            return sharing;
        }

        private int leastIngress(double[] nicIn, int[] candidates) {
            int best = candidates[0];
            double bestLoad = loadOf(nicIn, best);
            for (int k = 1; k < candidates.length; k++) {
                double load = loadOf(nicIn, candidates[k]);
                if (load < bestLoad) {
                    bestLoad = load;
                    best = candidates[k];
                }
            }
            return best;
        }

        private int batches(int[] reader, int[] batch, long[] staging) {
            long[] fill = new long[workers.size()];
            int[] current = new int[workers.size()];
            int count = 0;
            for (int i = 0; i < reader.length; i++) {
                int w = reader[i];
                long span = readSpan.get(i);
                if (fill[w] > 0 && fill[w] + span > options.batchBytes()) {
                    current[w]++;
                    fill[w] = 0;
                }
                batch[i] = current[w];
                staging[i] = fill[w];
                fill[w] += span;
                count = Math.max(count, current[w] + 1);
            }
            return count;
        }

        private Plan build(
                PublisherAssignment assignment,
                int[] reader,
                int[] dst,
                int[] batch,
                long[] staging,
                int batchCount) {
            int nodes = rollout.size();
            String[] nodeNames = new String[nodes];
            int[] nodeNics = new int[nodes];
            double[] nodeGbps = new double[nodes];
            for (int n = 0; n < nodes; n++) {
                nodeNames[n] = rollout.get(n).name();
                nodeNics[n] = rollout.get(n).nics();
                nodeGbps[n] = rollout.get(n).nicGbps();
            }
            Map<String, Node> byName = topology.byName();
            List<String> trainers = assignment.trainerNodes();
            String[] trainerNames = trainers.toArray(String[]::new);
            int[] trainerNics = new int[trainerNames.length];
            double[] trainerGbps = new double[trainerNames.length];
            for (int k = 0; k < trainerNames.length; k++) {
                trainerNics[k] = byName.get(trainerNames[k]).nics();
                trainerGbps[k] = byName.get(trainerNames[k]).nicGbps();
            }
            int count = workers.size();
            String[] ids = new String[count];
            String[] instances = new String[count];
            String[] segments = new String[count];
            int[] nicFirst = new int[count];
            byte[] modes = new byte[count];
            for (int w = 0; w < count; w++) {
                Worker worker = workers.get(w);
                ids[w] = worker.id();
                instances[w] = worker.instance();
                segments[w] = worker.segment();
                nicFirst[w] = worker.nicFirst();
                modes[w] = (byte) worker.mode().ordinal();
            }
            List<TensorSpec> tensors = manifest.tensors();
            String[] tensorNames = new String[tensors.size()];
            for (int t = 0; t < tensorNames.length; t++) {
                tensorNames[t] = tensors.get(t).name();
            }
            List<StoredFragment> fragments = manifest.fragments();
            String[] objectIds = new String[fragments.size()];
            long[] objectBytes = new long[fragments.size()];
            int[] objectTrainer = new int[fragments.size()];
            int[] nodeOfTensor = assignment.nodeOfTensor();
            for (int o = 0; o < objectIds.length; o++) {
                objectIds[o] = fragments.get(o).fragment();
                objectBytes[o] = fragments.get(o).bytes();
                objectTrainer[o] = nodeOfTensor[objectTensor[o]];
            }
            int writes = runEntity.size();
            byte[] flags = new byte[writes];
            for (int i = 0; i < readObject.size(); i++) {
                for (int r = readRunFirst.get(i); r < readRunFirst.get(i + 1); r++) {
                    if (entityWorker[runEntity.get(r)] < 0) {
                        flags[r] = (byte) (Plan.FANOUT | (dst[r] != reader[i] ? Plan.NOTIFY : 0));
                    }
                }
            }
            return new Plan(
                    new Columns.Header(
                            manifest.model(),
                            manifest.digest(),
                            placement.digest(),
                            topology.digest(),
                            options.batchBytes(),
                            batchCount),
                    new Columns.Hosts(nodeNames, nodeNics, nodeGbps),
                    new Columns.Hosts(trainerNames, trainerNics, trainerGbps),
                    new Columns.Workers(
                            ids,
                            instances,
                            segments,
                            wNode.clone(),
                            nicFirst,
                            wNicCount.clone(),
                            modes),
                    bufferIndex.keySet().toArray(String[]::new),
                    tensorNames,
                    new Columns.Objects(objectIds, objectBytes, objectTensor, objectTrainer),
                    new Columns.Reads(
                            readObject.toArray(),
                            reader,
                            batch,
                            staging,
                            readStart.toArray(),
                            readSpan.toArray(),
                            readRangeFirst.toArray(),
                            rangeStart.toArray(),
                            rangeLength.toArray(),
                            readRunFirst.toArray()),
                    new Columns.Writes(
                            dst,
                            runBuffer.toArray(),
                            flags,
                            runSrc.toArray(),
                            runDst.toArray(),
                            runLength.toArray(),
                            runLoopFirst.toArray(),
                            new Columns.Loops(
                                    loopCount.toArray(), loopSrc.toArray(), loopDst.toArray())));
        }
    }
}
