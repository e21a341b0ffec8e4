package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Slice;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The order in which the executor runs one loader's {@link Slice} (as control-api serves it and
 * {@link io.weightrelay.reshard.plan.SliceValidator} checked it at prepare): its reads batch by
 * batch, each reader's staging area within a slot, the node-delegate fan-outs it owes, the notify
 * names other loaders' batches bump here, and the byte totals it must see. Building it resolves
 * every destination in the group's buffers and fails, touching nothing, when a write would leave
 * its destination buffer or a read its staging batch: what only the loader, holding the group's
 * buffers, can check.
 *
 * <p>A loader's batch {@code k} is batch {@code k} of every one of its readers; its readers'
 * staging areas sit side by side in one slot of {@link #slotBytes()}. Worker indexes are the
 * slice's peers (the plan's workers, in its order).
 */
public final class SliceSchedule {

    /**
     * Fan-outs this loader does as node delegate once a writer's batch has landed.
     *
     * @param writerInstance instance whose batch carries the writes
     * @param batch the writer's batch index
     * @param expectedNotifies notifies that batch delivers to this loader's engine: one, however
     *     many of this loader's segments it writes into (the writer sends the batch as one
     *     submission, and the engine bumps the counter once per destination engine, not per
     *     segment)
     * @param writes received writes (slice receive indexes, flagged fan-out) whose destination is
     *     one of this loader's workers
     */
    public record FanOutGroup(
            String writerInstance, int batch, int expectedNotifies, List<Integer> writes) {}

    private final Slice plan;
    private final BufferDirectory directory;
    private final boolean[] mine;
    private final List<Integer> myWorkers = new ArrayList<>();
    private final int[] readerSlot;
    private final int readerCount;
    private final List<List<Integer>> readsByBatch;
    private final List<FanOutGroup> fanOutGroups = new ArrayList<>();
    private final List<WriterBatch> receivedFrom = new ArrayList<>();
    private final Map<String, List<Integer>> compatOfNode = new HashMap<>();
    private final Set<String> peerSegments = new java.util.TreeSet<>();
    private long readBytes;
    private long pushBytes;
    private long fanOutBytes;
    private long receiveBytes;

    public SliceSchedule(Slice plan, BufferDirectory directory) {
        this.plan = plan;
        String instance = plan.instance();
        this.directory = directory;
        int workers = plan.workerCount();
        mine = new boolean[workers];
        for (int w = 0; w < workers; w++) {
            mine[w] = plan.workerInstance(w).equals(instance);
            if (mine[w]) {
                myWorkers.add(w);
            }
            if (plan.workerMode(w) == Mode.COMPAT) {
                compatOfNode.computeIfAbsent(plan.workerNodeName(w), k -> new ArrayList<>()).add(w);
            }
        }
        readerSlot = new int[workers];
        java.util.Arrays.fill(readerSlot, -1);
        readsByBatch = new ArrayList<>();
        for (int b = 0; b < plan.batchCount(); b++) {
            readsByBatch.add(new ArrayList<>());
        }
        int readers = 0;
        for (int i = 0; i < plan.readCount(); i++) {
            int reader = plan.readReader(i);
            if (!mine[reader]) {
                throw new ApplyFailure(
                        instance,
                        "the slice of "
                                + instance
                                + " has a read by "
                                + plan.workerId(reader)
                                + " of another instance");
            }
            if (readerSlot[reader] < 0) {
                readerSlot[reader] = readers++;
            }
            readsByBatch.get(plan.readBatch(i)).add(i);
            readBytes += plan.readBytes(i);
            checkFits(i);
            for (int w = plan.writeFirst(i); w < plan.writeEnd(i); w++) {
                if ((plan.writeFlags(w) & Plan.RELAYED) != 0) {
                    continue; // its delegate's loader copies it
                }
                int dst = plan.writeDst(w);
                if (!mine[dst]) {
                    peerSegments.add(segmentOf(dst, plan.writeBuffer(w)));
                }
                pushBytes += plan.writeBytes(w);
                if (compatFanOut(plan.writeFlags(w), dst) && dst == reader) {
                    fanOutBytes += plan.writeBytes(w) * (compatPeers(dst).size() - 1);
                }
            }
        }
        readerCount = readers;
        Map<String, List<Integer>> groups = new LinkedHashMap<>();
        Map<String, Set<String>> groupSegments = new LinkedHashMap<>();
        // Where this loader's parameter-direct delegates receive what they relay on their node.
        Map<String, Integer> delegated = new HashMap<>();
        for (int v = 0; v < plan.receiveCount(); v++) {
            int dst = plan.receiveDst(v);
            if (mine[dst]
                    && (plan.receiveFlags(v) & Plan.FANOUT) != 0
                    && plan.workerMode(dst) != Mode.COMPAT) {
                delegated.put(plan.receiveLanding(v, dst), v);
            }
        }
        for (int v = 0; v < plan.receiveCount(); v++) {
            int dst = plan.receiveDst(v);
            int from = plan.receiveFrom(v);
            long bytes = plan.receiveBytes(v);
            if ((plan.receiveFlags(v) & Plan.RELAYED) != 0) {
                relay(v, dst, from, bytes, delegated, groups);
                continue;
            }
            boolean fanout = compatFanOut(plan.receiveFlags(v), dst);
            int peers = fanout ? compatPeers(dst).size() - 1 : 0;
            String group = plan.workerInstance(from) + "\u0000" + plan.receiveBatch(v);
            if (mine[dst]) {
                receiveBytes += bytes;
                groupSegments
                        .computeIfAbsent(group, k -> new LinkedHashSet<>())
                        .add(segmentOf(dst, plan.receiveBuffer(v)));
                if ((plan.receiveFlags(v) & Plan.NOTIFY) != 0) {
                    groups.computeIfAbsent(group, k -> new ArrayList<>()).add(v);
                    fanOutBytes += bytes * peers;
                }
                if (fanout) {
                    for (int p : compatPeers(dst)) {
                        if (!mine[p]) {
                            peerSegments.add(segmentOf(p, plan.receiveBuffer(v)));
                        }
                    }
                }
            }
            if (fanout) {
                for (int p : compatPeers(dst)) {
                    if (p != dst && mine[p]) {
                        receiveBytes += bytes;
                    }
                }
            }
        }
        groups.forEach(
                (key, writes) -> {
                    int sep = key.indexOf('\u0000');
                    fanOutGroups.add(
                            new FanOutGroup(
                                    key.substring(0, sep),
                                    Integer.parseInt(key.substring(sep + 1)),
                                    1,
                                    List.copyOf(writes)));
                });
        fanOutGroups.sort(
                Comparator.comparingInt(FanOutGroup::batch)
                        .thenComparing(FanOutGroup::writerInstance));
        for (String key : groupSegments.keySet()) {
            int sep = key.indexOf('\u0000');
            receivedFrom.add(
                    new WriterBatch(
                            key.substring(0, sep), Integer.parseInt(key.substring(sep + 1))));
        }
    }

    /**
     * A relayed write: received here when its destination is this loader's, and copied by this
     * loader, once its delegate's batch has landed, when the delegate is.
     */
    private void relay(
            int v,
            int dst,
            int delegate,
            long bytes,
            Map<String, Integer> delegated,
            Map<String, List<Integer>> groups) {
        if (mine[dst]) {
            receiveBytes += bytes;
        }
        if (!mine[delegate]) {
            return;
        }
        Integer landed = delegated.get(plan.receiveLanding(v, delegate));
        if (landed == null || plan.receiveBatch(landed) != plan.receiveBatch(v)) {
            throw new ApplyFailure(
                    plan.workerId(delegate),
                    "relays bytes to "
                            + plan.workerId(dst)
                            + " that it does not receive in batch "
                            + plan.receiveBatch(v));
        }
        groups.computeIfAbsent(
                        plan.workerInstance(plan.receiveFrom(landed))
                                + "\u0000"
                                + plan.receiveBatch(landed),
                        k -> new ArrayList<>())
                .add(v);
        fanOutBytes += bytes;
        if (!mine[dst]) {
            peerSegments.add(segmentOf(dst, plan.receiveBuffer(v)));
        }
    }

    /**
     * A fan-out write into a compatibility delegate, which copies it to its node's compat peers.
     */
    private boolean compatFanOut(int flags, int dst) {
        return (flags & Plan.FANOUT) != 0 && plan.workerMode(dst) == Mode.COMPAT;
    }

    /**
     * The read fits its staging batch and each of its writes its destination buffer, as the group's
     * registry holds it. (That the read stays inside its object and each write sends only bytes it
     * read is {@link io.weightrelay.reshard.plan.SliceValidator}'s.)
     */
    private void checkFits(int read) {
        String key = plan.objectId(plan.readObject(read));
        if (plan.readStaging(read) < 0
                || plan.readStaging(read) + plan.readSpan(read) > plan.batchBytes()) {
            throw new ApplyFailure(key, "read of " + key + " overflows its staging batch");
        }
        for (int w = plan.writeFirst(read); w < plan.writeEnd(read); w++) {
            long dstMax = plan.writeDstOffset(w) + plan.writeLength(w);
            for (int l = plan.loopFirst(w); l < plan.loopEnd(w); l++) {
                dstMax += (plan.loopCount(l) - 1) * plan.loopDstStride(l);
            }
            String worker = plan.workerId(plan.writeDst(w));
            BufferDirectory.Placed placed;
            try {
                placed = directory.require(worker, plan.buffer(plan.writeBuffer(w)));
            } catch (IllegalArgumentException e) {
                throw new ApplyFailure(worker, e.getMessage());
            }
            if (plan.writeDstOffset(w) < 0 || dstMax > placed.size()) {
                throw new ApplyFailure(
                        worker,
                        "write of "
                                + key
                                + " ends at "
                                + dstMax
                                + ", beyond buffer '"
                                + placed.bufferId()
                                + "' ("
                                + placed.size()
                                + " bytes) of worker "
                                + worker);
            }
        }
    }

    private List<Integer> compatPeers(int worker) {
        return compatOfNode.getOrDefault(plan.workerNodeName(worker), List.of());
    }

    private String segmentOf(int worker, int buffer) {
        try {
            return directory.require(plan.workerId(worker), plan.buffer(buffer)).segment();
        } catch (IllegalArgumentException e) {
            throw new ApplyFailure(plan.workerId(worker), e.getMessage());
        }
    }

    /**
     * The counter a writer's batch bumps on each destination engine. The model is part of it: two
     * models served by the same engines may be at the same generation number at once.
     */
    public static String notifyName(
            String model, long generation, String writerInstance, int batch) {
        return "wr-fanout-" + model + "-g" + generation + "-" + writerInstance + "-b" + batch;
    }

    /**
     * Segments of other instances this loader writes into: its pushes' destinations and, as node
     * delegate, its fan-outs'.
     */
    public Set<String> peerSegments() {
        return java.util.Collections.unmodifiableSet(peerSegments);
    }

    /** Store keys this loader reads. */
    public static Set<String> objectKeys(Slice plan, GenerationId generation) {
        Set<String> keys = new LinkedHashSet<>();
        for (int i = 0; i < plan.readCount(); i++) {
            keys.add(generation.objectKey(plan.objectId(plan.readObject(i))));
        }
        return keys;
    }

    public Slice plan() {
        return plan;
    }

    /** This loader's instance: the slice's. */
    public String instance() {
        return plan.instance();
    }

    public BufferDirectory directory() {
        return directory;
    }

    /** Plan indexes of this loader's workers. */
    public List<Integer> myWorkers() {
        return List.copyOf(myWorkers);
    }

    /** Position of a reader's staging area within a slot, or -1. */
    public int readerSlot(int worker) {
        return readerSlot[worker];
    }

    /** Staging bytes one batch of this loader needs: none when it reads nothing. */
    public long slotBytes() {
        return (long) readerCount * plan.batchBytes();
    }

    public int batchCount() {
        return readsByBatch.size();
    }

    /** Plan read indexes of batch {@code k}. */
    public List<Integer> reads(int batch) {
        return readsByBatch.get(batch);
    }

    public List<FanOutGroup> fanOutGroups() {
        return fanOutGroups;
    }

    /**
     * Every (writer, batch) that writes into this instance's segments. A notifying batch sends its
     * notify to every owner it wrote into, so each of these names must be registered here before
     * the writers start, also where this instance waits on none of them (a same-node consumer of a
     * delegate's batch, say).
     */
    public List<WriterBatch> receivedFrom() {
        return receivedFrom;
    }

    /** A writer instance's batch, whose notify name is {@link #notifyName}. */
    public record WriterBatch(String writerInstance, int batch) {}

    /** Compat workers on the node of {@code worker} (peer indexes), the worker included. */
    public List<Integer> compatWorkersBeside(int worker) {
        return compatPeers(worker);
    }

    /**
     * The worker whose buffer a fan-out of received write {@code v} copies from: the delegate it
     * landed in, or for a relayed write the delegate that relays it.
     */
    public int copySource(int v) {
        return (plan.receiveFlags(v) & Plan.RELAYED) != 0
                ? plan.receiveFrom(v)
                : plan.receiveDst(v);
    }

    /**
     * The workers a fan-out of received write {@code v} copies to (same buffer, same offsets): a
     * compatibility delegate's node peers, a relayed write's destination, or none (a
     * parameter-direct delegate's own write: the relayed writes after it name the copies).
     */
    public List<Integer> copyTargets(int v) {
        int dst = plan.receiveDst(v);
        if ((plan.receiveFlags(v) & Plan.RELAYED) != 0) {
            return List.of(dst);
        }
        if (!compatFanOut(plan.receiveFlags(v), dst)) {
            return List.of();
        }
        List<Integer> peers = new ArrayList<>(compatPeers(dst));
        peers.remove(Integer.valueOf(dst));
        return peers;
    }

    public long receiveBytes() {
        return receiveBytes;
    }

    /** Everything this loader moves: reads, pushes and fan-outs. */
    public long totalBytes() {
        return readBytes + pushBytes + fanOutBytes;
    }
}
