package io.weightrelay.reshard.plan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Gives each read one reader and each run one destination worker. Reads go largest first onto the
 * worker whose NICs end least loaded ({@code bytes read + bytes pushed to other nodes}, where the
 * runs a node's relays carry count once: {@link Relays#leaders}), preferring a consumer of the
 * read; a compatibility node's run lands on the reader when it is a compatibility worker of that
 * node, and otherwise on the node's compatibility worker with the least NIC ingress (the delegate
 * that fans it out).
 */
final class ReaderAssignment {
    private final RolloutWorkers rollout;
    private final DemandIndex demands;
    private final CutReads cut;

    /** The reader worker of each read. */
    final int[] reader;

    /** The destination worker of each run (for a compatibility node, its delegate). */
    final int[] dst;

    /**
     * Each run's relay group leader ({@link Relays#leaders}): a run led by another crosses the
     * network with its leader's group, once per node, so only leaders are charged as pushes.
     */
    final int[] lead;

    // Reader choice: the best (lowest score, then lowest index) candidate so far.
    private int best;
    private double bestScore;
    private double[] workerLoad;
    private int[][] workersOfNode;
    private boolean[] uniformNics;
    private int[] minAll;
    private int[] minCompat;

    ReaderAssignment(RolloutWorkers rollout, DemandIndex demands, CutReads cut) {
        this.rollout = rollout;
        this.demands = demands;
        this.cut = cut;
        this.reader = new int[cut.count()];
        this.dst = new int[cut.runEntity.size()];
        this.lead = leaders(demands, cut);
        assign();
    }

    /** Relay groups by the node and kind of each run's entity: a run led by another is relayed. */
    private static int[] leaders(DemandIndex demands, CutReads cut) {
        int runs = cut.runEntity.size();
        int[] runNode = new int[runs];
        boolean[] runDirect = new boolean[runs];
        for (int r = 0; r < runs; r++) {
            int e = cut.runEntity.get(r);
            runNode[r] = demands.entityNode[e];
            runDirect[r] = demands.entityWorker[e] >= 0;
        }
        return Relays.leaders(cut, runNode, runDirect);
    }

    private void assign() {
        int reads = cut.count();
        int nodes = rollout.nodeCount();
        int workerCount = rollout.count();
        if (reads > 0 && workerCount == 0) {
            throw new PlanningException("no worker to read with");
        }
        long[] readBytes = new long[reads];
        long[] demand = new long[reads];
        long[] crossing = new long[reads];
        Integer[] order = new Integer[reads];
        for (int i = 0; i < reads; i++) {
            readBytes[i] = cut.readBytes(i);
            demand[i] = cut.demandBytes(i);
            for (int r = cut.readRunFirst.get(i); r < cut.readRunFirst.get(i + 1); r++) {
                if (lead[r] == r) {
                    crossing[i] += cut.runBytes.get(r);
                }
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
        double[] nicLoad = new double[rollout.totalNics];
        double[] nicIn = new double[rollout.totalNics];
        long[] nodeDemand = new long[nodes];
        double[] nodeCost = new double[nodes];
        int[] workerStamp = new int[workerCount];
        int[] groupStamp = new int[nodes];
        workerLoad = new double[workerCount];
        int[][] sharing = rollout.workersSharingNics();
        indexNodeWorkers();
        for (int i : order) {
            int stamp = i + 1;
            Arrays.fill(nodeDemand, 0);
            for (int r = cut.readRunFirst.get(i); r < cut.readRunFirst.get(i + 1); r++) {
                int e = cut.runEntity.get(r);
                if (lead[r] == r) {
                    nodeDemand[demands.entityNode[e]] += cut.runBytes.get(r);
                }
                if (demands.entityWorker[e] >= 0) {
                    workerStamp[demands.entityWorker[e]] = stamp;
                } else {
                    groupStamp[demands.entityNode[e]] = stamp;
                }
            }
            for (int n = 0; n < nodes; n++) {
                nodeCost[n] = readBytes[i] + crossing[i] - nodeDemand[n];
            }
            best = -1;
            bestScore = Double.MAX_VALUE;
            for (int n = 0; n < nodes; n++) {
                if (!uniformNics[n]) {
                    for (int w : workersOfNode[n]) {
                        consider(w, i, stamp, nodeCost[n], readBytes[i], workerStamp, groupStamp);
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
            for (int r = cut.readRunFirst.get(i); r < cut.readRunFirst.get(i + 1); r++) {
                int w = demands.entityWorker[cut.runEntity.get(r)];
                if (w >= 0 && uniformNics[rollout.wNode[w]]) {
                    consider(
                            w,
                            i,
                            stamp,
                            nodeCost[rollout.wNode[w]],
                            readBytes[i],
                            workerStamp,
                            groupStamp);
                }
            }
            reader[i] = best;
            int readerNode = rollout.wNode[best];
            rollout.addLoad(nicLoad, best, nodeCost[readerNode]);
            for (int w : sharing[best]) {
                workerLoad[w] = rollout.loadOf(nicLoad, w);
            }
            refreshMinima(readerNode);
            rollout.addLoad(nicIn, best, readBytes[i]);
            for (int r = cut.readRunFirst.get(i); r < cut.readRunFirst.get(i + 1); r++) {
                int e = cut.runEntity.get(r);
                int node = demands.entityNode[e];
                int target;
                if (demands.entityWorker[e] >= 0) {
                    target = demands.entityWorker[e];
                } else if (node == readerNode) {
                    int[] local = demands.compatOfNode[node];
                    target = rollout.wCompat[best] ? best : local[i % local.length];
                } else {
                    target = leastIngress(nicIn, demands.compatOfNode[node]);
                }
                if (node != readerNode && lead[r] == r) {
                    rollout.addLoad(nicIn, target, cut.runBytes.get(r));
                }
                dst[r] = target;
            }
        }
    }

    private void consider(
            int w,
            int read,
            int stamp,
            double nodeCost,
            long readBytes,
            int[] workerStamp,
            int[] groupStamp) {
        boolean consumer =
                workerStamp[w] == stamp
                        || (rollout.wCompat[w] && groupStamp[rollout.wNode[w]] == stamp);
        // A reader that does not consume the read lands bytes it has no use for on its NIC:
        // charge them once more, so consumers win unless clearly busier.
        double share = nodeCost + (consumer ? 0 : readBytes);
        double score = workerLoad[w] + share / rollout.wNicCount[w];
        if (score < bestScore || (score == bestScore && w < best)) {
            bestScore = score;
            best = w;
        }
    }

    private void indexNodeWorkers() {
        int nodes = rollout.nodeCount();
        List<List<Integer>> byNode = new ArrayList<>(nodes);
        for (int n = 0; n < nodes; n++) {
            byNode.add(new ArrayList<>());
        }
        for (int w = 0; w < rollout.count(); w++) {
            byNode.get(rollout.wNode[w]).add(w);
        }
        workersOfNode = new int[nodes][];
        uniformNics = new boolean[nodes];
        minAll = new int[nodes];
        minCompat = new int[nodes];
        for (int n = 0; n < nodes; n++) {
            workersOfNode[n] = byNode.get(n).stream().mapToInt(Integer::intValue).toArray();
            uniformNics[n] = true;
            for (int w : workersOfNode[n]) {
                uniformNics[n] &= rollout.wNicCount[w] == rollout.wNicCount[workersOfNode[n][0]];
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
            if (rollout.wCompat[w] && (compat < 0 || workerLoad[w] < workerLoad[compat])) {
                compat = w;
            }
        }
        minAll[node] = all;
        minCompat[node] = compat;
    }

    private int leastIngress(double[] nicIn, int[] candidates) {
        int best = candidates[0];
        double bestLoad = rollout.loadOf(nicIn, best);
        for (int k = 1; k < candidates.length; k++) {
            double load = rollout.loadOf(nicIn, candidates[k]);
            if (load < bestLoad) {
                bestLoad = load;
                best = candidates[k];
            }
        }
        return best;
    }
}
