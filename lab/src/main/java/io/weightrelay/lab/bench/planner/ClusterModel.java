package io.weightrelay.lab.bench.planner;

import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.plan.Demands;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.timing.Traffic;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import java.util.List;
import java.util.Map;

/**
 * Time of a weight update on full-duplex NICs.
 *
 * <p>The prediction models the read, redistribute, scatter pipeline: reads are inbound and pushes
 * outbound on a NIC, so they overlap; every NIC direction and every trainer node's egress streams
 * at line rate, and the update takes as long as the busiest of them plus the one bubble a pipeline
 * has, the first batch's read.
 *
 * <p>A NIC's rate counts frames, headers included: {@link #predictedSeconds(Plan, double)} takes
 * the fraction of the line rate that carries payload ({@code 1448 / 1514} for TCP with timestamps
 * in 1500-byte frames as a Linux interface counts them; about 0.94 on an Ethernet wire, which adds
 * preamble, gap and checksum; above 0.99 with 9000-byte frames). {@link #predictedSeconds(Plan)}
 * takes every byte of the line rate as payload.
 *
 * <p>The lower bound holds for every plan on the same placement and topology: every byte a node
 * needs must enter it through its NICs once; every byte a trainer node stores that anyone needs
 * must leave through its NICs once; and every byte more than one node needs must be sent by some
 * rollout NIC to every needing node but the one that read it.
 */
public final class ClusterModel {
    private ClusterModel() {}

    public static double predictedSeconds(Plan plan) {
        return predictedSeconds(plan, Traffic.of(plan));
    }

    /**
     * As {@link #predictedSeconds(Plan)} with {@code payloadFraction} (in (0, 1]) of every NIC's
     * line rate carrying payload, the rest frame and protocol headers.
     */
    public static double predictedSeconds(Plan plan, double payloadFraction) {
        if (!(payloadFraction > 0 && payloadFraction <= 1)) {
            throw new IllegalArgumentException(
                    "payload fraction must be in (0, 1]: " + payloadFraction);
        }
        return predictedSeconds(plan, Traffic.of(plan)) / payloadFraction;
    }

    public static double predictedSeconds(Plan plan, Traffic traffic) {
        double[] in = traffic.nicIn();
        double[] out = traffic.nicOut();
        double busiest = 0;
        int nic = 0;
        for (int n = 0; n < plan.nodes().count(); n++) {
            double rate = plan.nodes().gbps(n) * 1e9 / 8;
            for (int k = 0; k < plan.nodes().nics(n); k++, nic++) {
                busiest = Math.max(busiest, Math.max(in[nic], out[nic]) / rate);
            }
        }
        double[] trainer = traffic.trainerOut();
        for (int k = 0; k < trainer.length; k++) {
            double rate = plan.trainers().nics(k) * plan.trainers().gbps(k) * 1e9 / 8;
            busiest = Math.max(busiest, trainer[k] / rate);
        }
        double[] firstBatch = new double[plan.workerCount()];
        for (int i = 0; i < plan.readCount(); i++) {
            if (plan.readBatch(i) == 0) {
                firstBatch[plan.readReader(i)] += plan.readBytes(i);
            }
        }
        double bubble = 0;
        for (int w = 0; w < firstBatch.length; w++) {
            double rate = plan.workerNicCount(w) * plan.nodes().gbps(plan.workerNode(w)) * 1e9 / 8;
            bubble = Math.max(bubble, firstBatch[w] / rate);
        }
        return busiest + bubble;
    }

    public static double lowerBoundSeconds(
            Demands demands, Topology topology, PublisherAssignment assignment) {
        Map<String, Node> nodes = topology.byName();
        double bound = 0;
        long nodeSum = 0;
        long[] nodeBytes = demands.nodeBytes();
        for (int n = 0; n < nodeBytes.length; n++) {
            Node node = nodes.get(demands.nodeNames().get(n));
            if (node == null) {
                throw new IllegalArgumentException(
                        "node " + demands.nodeNames().get(n) + " is not in the topology");
            }
            bound = Math.max(bound, nodeBytes[n] / (node.nics() * node.nicBytesPerSecond()));
            nodeSum += nodeBytes[n];
        }
        long[] tensorBytes = demands.tensorBytes();
        List<String> trainers = assignment.trainerNodes();
        int[] nodeOfTensor = assignment.nodeOfTensor();
        long[] perTrainer = new long[trainers.size()];
        for (int t = 0; t < tensorBytes.length; t++) {
            perTrainer[nodeOfTensor[t]] += tensorBytes[t];
        }
        for (int k = 0; k < perTrainer.length; k++) {
            Node node = nodes.get(trainers.get(k));
            bound = Math.max(bound, perTrainer[k] / (node.nics() * node.nicBytesPerSecond()));
        }
        double rolloutEgress = 0;
        for (Node node : topology.nodes(Role.ROLLOUT)) {
            rolloutEgress += node.nics() * node.nicBytesPerSecond();
        }
        if (rolloutEgress > 0) {
            bound = Math.max(bound, (nodeSum - demands.storeBytes()) / rolloutEgress);
        }
        return bound;
    }
}
