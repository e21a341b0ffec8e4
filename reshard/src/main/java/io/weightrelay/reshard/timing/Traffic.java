package io.weightrelay.reshard.timing;

import io.weightrelay.reshard.plan.Plan;

/**
 * Bytes per NIC and direction that a plan puts on the network. Rollout NICs are indexed node by
 * node (node 0's NICs first); a worker's bytes are spread evenly over the NICs it stripes over.
 * Same-node writes use the local transport and touch no NIC, nor do relayed writes (the delegate
 * copies them on its node).
 *
 * @param nicRead bytes each rollout NIC reads from the store (inbound)
 * @param nicIn bytes each rollout NIC receives: reads plus writes from other nodes
 * @param nicOut bytes each rollout NIC sends to other nodes
 * @param trainerOut bytes each trainer node serves to readers (outbound, over all its NICs)
 */
public record Traffic(double[] nicRead, double[] nicIn, double[] nicOut, double[] trainerOut) {

    public static Traffic of(Plan plan) {
        int nics = plan.nodes().nicCount();
        double[] read = new double[nics];
        double[] in = new double[nics];
        double[] out = new double[nics];
        double[] trainer = new double[plan.trainers().count()];
        for (int i = 0; i < plan.readCount(); i++) {
            int reader = plan.readReader(i);
            long bytes = plan.readBytes(i);
            add(plan, read, reader, bytes);
            add(plan, in, reader, bytes);
            trainer[plan.objectTrainer(plan.readObject(i))] += bytes;
            int readerNode = plan.workerNode(reader);
            for (int w = plan.writeFirst(i); w < plan.writeEnd(i); w++) {
                int dst = plan.writeDst(w);
                // a relayed write is its delegate's copy inside the destination's node
                if (plan.workerNode(dst) != readerNode
                        && (plan.writeFlags(w) & Plan.RELAYED) == 0) {
                    long moved = plan.writeBytes(w);
                    add(plan, out, reader, moved);
                    add(plan, in, dst, moved);
                }
            }
        }
        return new Traffic(read, in, out, trainer);
    }

    private static void add(Plan plan, double[] column, int worker, long bytes) {
        int first = plan.workerNic(worker);
        int count = plan.workerNicCount(worker);
        double share = (double) bytes / count;
        for (int n = first; n < first + count; n++) {
            column[n] += share;
        }
    }

    /** Max over mean of {@code read + sent to other nodes} over all rollout NICs. */
    public double nicBalance() {
        double max = 0;
        double sum = 0;
        for (int n = 0; n < nicRead.length; n++) {
            double load = nicRead[n] + nicOut[n];
            max = Math.max(max, load);
            sum += load;
        }
        return sum == 0 ? 1.0 : max / (sum / nicRead.length);
    }

    @Override
    public double[] nicRead() {
        return nicRead.clone();
    }

    @Override
    public double[] nicIn() {
        return nicIn.clone();
    }

    @Override
    public double[] nicOut() {
        return nicOut.clone();
    }

    @Override
    public double[] trainerOut() {
        return trainerOut.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Traffic t
                && java.util.Arrays.equals(nicRead, t.nicRead)
                && java.util.Arrays.equals(nicIn, t.nicIn)
                && java.util.Arrays.equals(nicOut, t.nicOut)
                && java.util.Arrays.equals(trainerOut, t.trainerOut);
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(nicIn) * 31 + java.util.Arrays.hashCode(nicOut);
    }

    @Override
    public String toString() {
        return "Traffic[nics=" + nicIn.length + ", trainers=" + trainerOut.length + "]";
    }
}
