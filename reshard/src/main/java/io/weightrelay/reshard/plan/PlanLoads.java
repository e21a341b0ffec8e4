package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.placement.Mode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The bytes a plan puts on each NIC and each loader instance, for operators to see imbalance: per
 * rollout NIC what its workers read from the store, push to workers on other nodes and receive from
 * other nodes; per trainer NIC what the store serves from that node; per instance what its readers
 * read and write and what its workers receive, as its loader counts them: a node delegate's fan-out
 * copies (a {@link Plan#FANOUT} write copied into every other compatibility worker of its node, or
 * into the destination of each {@link Plan#RELAYED} write after it) are pushed by the delegate's
 * instance and received by each copy's. A worker's bytes are spread evenly over its NICs, as the
 * planner balances them; fan-out copies stay inside a node and put no byte on a NIC. One pass over
 * the plan's reads and writes.
 *
 * @param nics every NIC of every trainer node, then of every rollout node, in plan order
 * @param instances per loader instance, by instance id
 */
public record PlanLoads(List<Nic> nics, List<Instance> instances) {

    public PlanLoads {
        nics = List.copyOf(nics);
        instances = List.copyOf(instances);
    }

    /** One NIC: {@code node}'s NIC number {@code nic}. */
    public record Nic(
            String node,
            int nic,
            boolean trainer,
            double gbps,
            long readBytes,
            long pushedBytes,
            long receivedBytes) {}

    /**
     * One loader instance.
     *
     * @param readBytes store bytes its readers read
     * @param pushedBytes bytes its readers write to any worker, its own included, plus the fan-out
     *     copies its delegates make
     * @param receivedBytes bytes written into its workers, by any reader or delegate
     */
    public record Instance(String instance, long readBytes, long pushedBytes, long receivedBytes) {}

    public static PlanLoads of(Plan plan) {
        Hosts nodes = plan.nodes();
        Hosts trainers = plan.trainers();
        int workers = plan.workerCount();
        double[] read = new double[nodes.nicCount()];
        double[] pushed = new double[nodes.nicCount()];
        double[] received = new double[nodes.nicCount()];
        double[] served = new double[trainers.nicCount()];
        // {read, pushed, received} per instance; each worker points at its instance's counts
        Map<String, long[]> perInstance = new TreeMap<>();
        long[][] counts = new long[workers][];
        List<List<Integer>> compatOfNode = new ArrayList<>();
        for (int n = 0; n < nodes.count(); n++) {
            compatOfNode.add(new ArrayList<>());
        }
        for (int w = 0; w < workers; w++) {
            counts[w] = perInstance.computeIfAbsent(plan.workerInstance(w), i -> new long[3]);
            if (plan.workerMode(w) == Mode.COMPAT) {
                compatOfNode.get(plan.workerNode(w)).add(w);
            }
        }
        for (int r = 0; r < plan.readCount(); r++) {
            int reader = plan.readReader(r);
            int readerNode = plan.workerNode(reader);
            long bytes = plan.readBytes(r);
            int readerNic = plan.workerNic(reader);
            spread(read, readerNic, plan.workerNicCount(reader), bytes);
            int trainer = plan.objectTrainer(plan.readObject(r));
            spread(served, trainers.firstNic(trainer), trainers.nics(trainer), bytes);
            counts[reader][0] += bytes;
            int delegate = -1;
            for (int x = plan.writeFirst(r); x < plan.writeEnd(r); x++) {
                int dst = plan.writeDst(x);
                long length = plan.writeBytes(x);
                if ((plan.writeFlags(x) & Plan.RELAYED) != 0) {
                    // the delegate's copy on the destination's node
                    counts[delegate][1] += length;
                    counts[dst][2] += length;
                    continue;
                }
                delegate = dst;
                counts[reader][1] += length;
                counts[dst][2] += length;
                int dstNode = plan.workerNode(dst);
                if ((plan.writeFlags(x) & Plan.FANOUT) != 0
                        && plan.workerMode(dst) == Mode.COMPAT) {
                    for (int copy : compatOfNode.get(dstNode)) {
                        if (copy != dst) {
                            counts[dst][1] += length;
                            counts[copy][2] += length;
                        }
                    }
                }
                if (dstNode != readerNode) {
                    spread(pushed, readerNic, plan.workerNicCount(reader), length);
                    spread(received, plan.workerNic(dst), plan.workerNicCount(dst), length);
                }
            }
        }
        List<Nic> nics = new ArrayList<>(served.length + read.length);
        for (int t = 0; t < trainers.count(); t++) {
            for (int i = 0; i < trainers.nics(t); i++) {
                nics.add(
                        new Nic(
                                trainers.name(t),
                                i,
                                true,
                                trainers.gbps(t),
                                Math.round(served[trainers.firstNic(t) + i]),
                                0,
                                0));
            }
        }
        for (int n = 0; n < nodes.count(); n++) {
            for (int i = 0; i < nodes.nics(n); i++) {
                int k = nodes.firstNic(n) + i;
                nics.add(
                        new Nic(
                                nodes.name(n),
                                i,
                                false,
                                nodes.gbps(n),
                                Math.round(read[k]),
                                Math.round(pushed[k]),
                                Math.round(received[k])));
            }
        }
        List<Instance> instances = new ArrayList<>(perInstance.size());
        perInstance.forEach((id, c) -> instances.add(new Instance(id, c[0], c[1], c[2])));
        return new PlanLoads(nics, instances);
    }

    private static void spread(double[] load, int first, int count, long bytes) {
        double share = (double) bytes / count;
        for (int i = first; i < first + count; i++) {
            load[i] += share;
        }
    }
}
