package io.weightrelay.reshard.plan;

import java.util.Arrays;

/**
 * Parameter-direct writes of one read that carry the same bytes to the same place in several
 * workers of one other node: instances with the same layout on one node (or ranks that replicate a
 * tensor at the same offset). Sent as they are, those bytes would cross the network once per
 * worker. Instead one of them, the delegate (rotating with the read, so a node's loaders share the
 * copies), is flagged {@link Plan#FANOUT} and {@link Plan#NOTIFY}, and the others, flagged {@link
 * Plan#RELAYED}, follow it in the read's writes: the delegate's loader copies them on its node once
 * the batch has landed. Writes are grouped only when run, loops, buffer and node are all equal, so
 * a relayed copy reads exactly the bytes the delegate received.
 *
 * <p>The groups are found before readers are chosen ({@link #leaders}), so that the reader
 * assignment charges each group's bytes once per node, as they are sent.
 */
final class Relays {
    // A read's writes are grouped by a hash of their geometry and their index in the read, packed
    // in one long: a read with more writes than this is left as it is.
    private static final int INDEX_BITS = 20;
    private static final long INDEX_MASK = (1L << INDEX_BITS) - 1;

    /** The writes in their new order ({@code order[k]}: old index of new write {@code k}). */
    final int[] order;

    /** The flags of the writes, in the new order. */
    final byte[] flags;

    /** Whether any write was relayed (otherwise {@link #order} is the identity). */
    final boolean any;

    private Relays(int[] order, byte[] flags, boolean any) {
        this.order = order;
        this.flags = flags;
        this.any = any;
    }

    /**
     * @param lead each write's group leader ({@link #leaders}, computed before readers were chosen)
     * @param flags the writes' flags so far (fan-out and notify of compatibility writes), in the
     *     cut's order
     */
    static Relays of(
            CutReads cut, int[] reader, int[] dst, int[] workerNode, int[] lead, byte[] flags) {
        int writes = flags.length;
        int[] order = new int[writes];
        byte[] outFlags = new byte[writes];
        int[] groupSize = new int[16];
        boolean any = false;
        int at = 0;
        for (int i = 0; i < cut.count(); i++) {
            int first = cut.readRunFirst.get(i);
            int end = cut.readRunFirst.get(i + 1);
            int readerNode = workerNode[reader[i]];
            // Only a group on another node than the reader's is relayed.
            boolean relays = false;
            for (int r = first; r < end && !relays; r++) {
                relays = lead[r] != r && workerNode[dst[r]] != readerNode;
            }
            if (!relays) {
                for (int r = first; r < end; r++) {
                    order[at] = r;
                    outFlags[at++] = flags[r];
                }
                continue;
            }
            if (groupSize.length < end - first) {
                groupSize = new int[end - first];
            }
            Arrays.fill(groupSize, 0, end - first, 0);
            for (int r = first; r < end; r++) {
                groupSize[lead[r] - first]++;
            }
            // Emit: each group at the place of its first write, the delegate first.
            boolean[] placed = new boolean[end - first];
            for (int r = first; r < end; r++) {
                if (placed[r - first]) {
                    continue;
                }
                int size = groupSize[lead[r] - first];
                if (size < 2 || workerNode[dst[r]] == readerNode) {
                    placed[r - first] = true;
                    order[at] = r;
                    outFlags[at++] = flags[r];
                    continue;
                }
                any = true;
                int pick = i % size;
                int delegate = -1;
                int seen = 0;
                for (int q = r; q < end; q++) {
                    if (lead[q] == r && seen++ == pick) {
                        delegate = q;
                    }
                }
                order[at] = delegate;
                outFlags[at++] = (byte) (Plan.FANOUT | Plan.NOTIFY);
                placed[delegate - first] = true;
                for (int q = r; q < end; q++) {
                    if (lead[q] == r && q != delegate) {
                        order[at] = q;
                        outFlags[at++] = (byte) Plan.RELAYED;
                        placed[q - first] = true;
                    }
                }
            }
        }
        return new Relays(order, outFlags, any);
    }

    /**
     * Each run's group leader: the first run of its read with the same geometry into a
     * parameter-direct worker of the same node (itself when none is earlier, and for every run to a
     * compatibility node, which has its own delegate). Whatever worker reads it, a run led by
     * another never crosses the network on its own: on the reader's node it is a local copy, on any
     * other node one of its group carries the bytes there and that delegate copies them ({@link
     * #of}). Computed before readers are chosen, so that {@link ReaderAssignment} charges a reader
     * with the bytes that cross the network, not with one push per consumer.
     *
     * @param runNode the node of each run's entity
     * @param runDirect whether each run goes to one parameter-direct worker
     */
    static int[] leaders(CutReads cut, int[] runNode, boolean[] runDirect) {
        int[] lead = new int[runNode.length];
        for (int r = 0; r < lead.length; r++) {
            lead[r] = r;
        }
        int[] nodeStamp = new int[Math.max(1, nodeCount(runNode))];
        long[] keys = new long[16];
        for (int i = 0; i < cut.count(); i++) {
            int first = cut.readRunFirst.get(i);
            int end = cut.readRunFirst.get(i + 1);
            // Only a read with two direct runs to one node can have a group.
            boolean twice = false;
            for (int r = first; r < end && !twice; r++) {
                if (runDirect[r]) {
                    twice = nodeStamp[runNode[r]] == i + 1;
                    nodeStamp[runNode[r]] = i + 1;
                }
            }
            if (!twice || end - first > INDEX_MASK) {
                continue;
            }
            // Group the candidates by geometry: equal hashes side by side, then checked for real.
            int n = 0;
            if (keys.length < end - first) {
                keys = new long[end - first];
            }
            for (int r = first; r < end; r++) {
                if (runDirect[r]) {
                    keys[n++] = (hash(cut, r, runNode[r]) << INDEX_BITS) | (r - first);
                }
            }
            Arrays.sort(keys, 0, n);
            for (int a = 0; a < n; ) {
                int b = a + 1;
                while (b < n && (keys[b] >>> INDEX_BITS) == (keys[a] >>> INDEX_BITS)) {
                    b++;
                }
                // In index order within a bucket: the first run of each geometry leads the others.
                for (int p = a; p < b; p++) {
                    int rp = first + (int) (keys[p] & INDEX_MASK);
                    if (lead[rp] != rp) {
                        continue;
                    }
                    for (int q = p + 1; q < b; q++) {
                        int rq = first + (int) (keys[q] & INDEX_MASK);
                        if (lead[rq] == rq
                                && runNode[rq] == runNode[rp]
                                && sameGeometry(cut, rp, rq)) {
                            lead[rq] = rp;
                        }
                    }
                }
                a = b;
            }
        }
        return lead;
    }

    private static int nodeCount(int[] workerNode) {
        int max = -1;
        for (int n : workerNode) {
            max = Math.max(max, n);
        }
        return max + 1;
    }

    private static long hash(CutReads cut, int r, int node) {
        long h = node;
        h = h * 0x9E3779B97F4A7C15L + cut.runBuffer.get(r);
        h = h * 0x9E3779B97F4A7C15L + cut.runSrc.get(r);
        h = h * 0x9E3779B97F4A7C15L + cut.runDst.get(r);
        h = h * 0x9E3779B97F4A7C15L + cut.runLength.get(r);
        for (int l = cut.runLoopFirst.get(r); l < cut.runLoopFirst.get(r + 1); l++) {
            h = h * 0x9E3779B97F4A7C15L + cut.loopCount.get(l);
            h = h * 0x9E3779B97F4A7C15L + cut.loopSrc.get(l);
            h = h * 0x9E3779B97F4A7C15L + cut.loopDst.get(l);
        }
        h ^= h >>> 29;
        // non-negative and short enough to leave room for the index
        return (h >>> (INDEX_BITS + 1));
    }

    private static boolean sameGeometry(CutReads cut, int a, int b) {
        if (cut.runBuffer.get(a) != cut.runBuffer.get(b)
                || cut.runSrc.get(a) != cut.runSrc.get(b)
                || cut.runDst.get(a) != cut.runDst.get(b)
                || cut.runLength.get(a) != cut.runLength.get(b)) {
            return false;
        }
        int la = cut.runLoopFirst.get(a);
        int lb = cut.runLoopFirst.get(b);
        int n = cut.runLoopFirst.get(a + 1) - la;
        if (cut.runLoopFirst.get(b + 1) - lb != n) {
            return false;
        }
        for (int k = 0; k < n; k++) {
            if (cut.loopCount.get(la + k) != cut.loopCount.get(lb + k)
                    || cut.loopSrc.get(la + k) != cut.loopSrc.get(lb + k)
                    || cut.loopDst.get(la + k) != cut.loopDst.get(lb + k)) {
                return false;
            }
        }
        return true;
    }
}
