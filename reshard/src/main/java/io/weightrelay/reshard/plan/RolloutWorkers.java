package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The planner's view of the rollout side: the rollout nodes of the topology, and each worker of the
 * placement with its node index, its NICs (numbered across all nodes) and its mode. Checks that
 * every worker sits on a rollout node and within its NICs.
 */
final class RolloutWorkers {
    final List<Node> rollout;
    final List<Worker> workers;
    final int[] wNode;
    final int[] wNicFirst;
    final int[] wNicCount;
    final boolean[] wCompat;
    final int totalNics;

    RolloutWorkers(Topology topology, TargetPlacement placement) {
        rollout = topology.nodes(Role.ROLLOUT);
        Map<String, Integer> nodeIndex = new HashMap<>();
        int[] nicBase = new int[rollout.size()];
        int nics = 0;
        for (int n = 0; n < rollout.size(); n++) {
            nodeIndex.put(rollout.get(n).name(), n);
            nicBase[n] = nics;
            nics += rollout.get(n).nics();
        }
        totalNics = nics;
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
                throw PlanningException.ofWorker(
                        worker.id(),
                        "node " + worker.node() + " is not a rollout node of the topology");
            }
            if (worker.nicFirst() + worker.nicCount() > rollout.get(node).nics()) {
                throw PlanningException.ofWorker(
                        worker.id(),
                        "NICs beyond the "
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

    int count() {
        return workers.size();
    }

    int nodeCount() {
        return rollout.size();
    }

    /** The load of a worker's busiest NIC. */
    double loadOf(double[] load, int worker) {
        double max = 0;
        for (int n = wNicFirst[worker]; n < wNicFirst[worker] + wNicCount[worker]; n++) {
            max = Math.max(max, load[n]);
        }
        return max;
    }

    /** Spreads {@code bytes} evenly over a worker's NICs. */
    void addLoad(double[] load, int worker, double bytes) {
        double share = bytes / wNicCount[worker];
        for (int n = wNicFirst[worker]; n < wNicFirst[worker] + wNicCount[worker]; n++) {
            load[n] += share;
        }
    }

    /** For each worker, the workers (itself included) that use any of its NICs. */
    int[][] workersSharingNics() {
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

    /** The plan's worker table: each worker as the placement lists it, with its node index. */
    Columns.Workers table() {
        byte[] modes = new byte[workers.size()];
        for (int w = 0; w < modes.length; w++) {
            modes[w] = (byte) workers.get(w).mode().ordinal();
        }
        return new Columns.Workers(
                workers.stream().map(Worker::id).toArray(String[]::new),
                workers.stream().map(Worker::instance).toArray(String[]::new),
                workers.stream().map(Worker::segment).toArray(String[]::new),
                wNode.clone(),
                workers.stream().mapToInt(Worker::nicFirst).toArray(),
                wNicCount.clone(),
                modes);
    }
}
