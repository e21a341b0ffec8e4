package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.placement.Mode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Cuts a plan into the slices of some loaders in one scan: each read goes to its reader's slice,
 * each write to its destination's (a fan-out write to every loader with a compatibility worker on
 * the delegate's node). A loader's share is gathered column by column straight as the varints of
 * {@link Slice#encode()}, so a slice is encoded without being built, and built by decoding that.
 */
final class SliceCutter {
    private SliceCutter() {}

    static Map<String, Slice> slices(Plan plan, Set<String> instances) {
        Map<String, byte[]> encodings = encodings(plan, instances);
        Map<String, Slice> out = new TreeMap<>();
        for (Map.Entry<String, byte[]> e : encodings.entrySet()) {
            out.put(e.getKey(), Slice.decode(e.getValue()));
            e.setValue(null);
        }
        return out;
    }

    static Map<String, byte[]> encodings(Plan plan, Set<String> instances) {
        ByteSink peers = new ByteSink(256 + plan.workerCount() * 64);
        Columns.Peers.of(plan).encode(peers);
        Map<String, Share> shares = scan(plan, instances);
        Map<String, byte[]> out = new TreeMap<>();
        for (Map.Entry<String, Share> e : shares.entrySet()) {
            out.put(e.getKey(), encode(plan, peers, e.getValue()));
            // Each share's columns are garbage once its slice is encoded.
            e.setValue(null);
        }
        return out;
    }

    private static Map<String, Share> scan(Plan plan, Set<String> instances) {
        int workers = plan.workerCount();
        Map<String, Share> shares = new TreeMap<>();
        List<Share> ofWorker = new ArrayList<>(workers);
        List<List<Share>> compatOnNode = new ArrayList<>();
        for (int n = 0; n < plan.nodes().count(); n++) {
            compatOnNode.add(new ArrayList<>(2));
        }
        for (int w = 0; w < workers; w++) {
            Share share = null;
            if (instances.contains(plan.workerInstance(w))) {
                share = shares.computeIfAbsent(plan.workerInstance(w), i -> new Share(i, plan));
                List<Share> onNode = compatOnNode.get(plan.workerNode(w));
                if (plan.workerMode(w) == Mode.COMPAT && !onNode.contains(share)) {
                    onNode.add(share);
                }
            }
            ofWorker.add(share);
        }
        for (String instance : instances) {
            if (!shares.containsKey(instance)) {
                throw new IllegalArgumentException(
                        "instance " + instance + " has no worker in the plan");
            }
        }
        for (int i = 0; i < plan.readCount(); i++) {
            Share reader = ofWorker.get(plan.readReader(i));
            if (reader != null) {
                reader.addRead(plan, i);
            }
            int delegate = -1;
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                int dst = plan.writeDst(x);
                if ((plan.writeFlags(x) & Plan.RELAYED) != 0) {
                    // received from the delegate, whose loader copies it
                    Share to = ofWorker.get(dst);
                    Share by = ofWorker.get(delegate);
                    if (to != null) {
                        to.addReceive(plan, i, x, delegate);
                    }
                    if (by != null && by != to) {
                        by.addReceive(plan, i, x, delegate);
                    }
                    continue;
                }
                delegate = dst;
                if ((plan.writeFlags(x) & Plan.FANOUT) != 0
                        && plan.workerMode(dst) == Mode.COMPAT) {
                    for (Share share : compatOnNode.get(plan.workerNode(dst))) {
                        share.addReceive(plan, i, x, plan.readReader(i));
                    }
                } else if (ofWorker.get(dst) != null) {
                    ofWorker.get(dst).addReceive(plan, i, x, plan.readReader(i));
                }
            }
        }
        return shares;
    }

    /** The bytes of {@link Slice#encode()} of the loader's slice. */
    private static byte[] encode(Plan plan, ByteSink peers, Share s) {
        s.close();
        List<Packed> columns = s.inSliceOrder();
        int size = 1024 + peers.size() + s.objects.size() * 48;
        for (Packed c : columns) {
            size += 5 + c.values.size();
        }
        ByteSink out = new ByteSink(size);
        out.string(s.relays ? Slice.MAGIC_RELAYS : Slice.MAGIC).string(s.instance);
        plan.header.encode(out);
        out.raw(peers);
        out.varInt(s.buffers.size());
        for (int b = 0; b < s.buffers.size(); b++) {
            out.string(plan.buffer(s.buffers.planIndex(b)));
        }
        out.varInt(s.objects.size());
        for (int o = 0; o < s.objects.size(); o++) {
            out.string(plan.objectId(s.objects.planIndex(o)));
        }
        out.varInt(s.objects.size());
        for (int o = 0; o < s.objects.size(); o++) {
            out.varLong(plan.objectBytes(s.objects.planIndex(o)));
        }
        for (Packed c : columns) {
            c.writeTo(out);
        }
        return out.toByteArray();
    }

    /** A column written as it grows, in its encoding: a varint (or u8) per value, and a count. */
    static final class Packed {
        final ByteSink values;
        private final boolean u8;
        private int count;

        Packed(int capacity, boolean u8) {
            values = new ByteSink(capacity);
            this.u8 = u8;
        }

        Packed(int capacity) {
            this(capacity, false);
        }

        void add(long value) {
            if (u8) {
                values.u8((int) value);
            } else {
                values.varLong(value);
            }
            count++;
        }

        int size() {
            return count;
        }

        void writeTo(ByteSink out) {
            out.varInt(count).raw(values);
        }
    }

    /**
     * Indexes into a plan's table renumbered for a slice, in the order the scan first meets them:
     * the slice's own table lists the plan's entries in that order.
     */
    static final class Renumbering {
        // Plan index -> slice index, -1 while the slice has no such entry.
        private final int[] sliceIndex;
        private final IntList planIndexes;

        Renumbering(int planCount, int capacity) {
            sliceIndex = new int[planCount];
            Arrays.fill(sliceIndex, -1);
            planIndexes = new IntList(capacity);
        }

        /** The slice index of a plan index, numbering it next if the slice has none yet. */
        int of(int planIndex) {
            if (sliceIndex[planIndex] < 0) {
                sliceIndex[planIndex] = planIndexes.size();
                planIndexes.add(planIndex);
            }
            return sliceIndex[planIndex];
        }

        int size() {
            return planIndexes.size();
        }

        int planIndex(int sliceIndex) {
            return planIndexes.get(sliceIndex);
        }
    }

    /** One loader's columns while the plan is scanned. */
    static final class Share {
        final String instance;
        final Renumbering objects;
        final Renumbering buffers;
        final Packed rReader;
        final Packed rObject;
        final Packed rBatch;
        final Packed rStaging;
        final Packed rStart;
        final Packed rSpan;
        final Packed rRangeFirst;
        final Packed gStart;
        final Packed gLength;
        final Packed rWriteFirst;
        final Packed wDst;
        final Packed wBuffer;
        final Packed wFlags;
        final Packed wSrc;
        final Packed wDstOffset;
        final Packed wLength;
        final Packed wLoopFirst;
        final Packed lCount;
        final Packed lSrc;
        final Packed lDst;
        final Packed vDst;
        final Packed vFrom;
        final Packed vBatch;
        final Packed vBuffer;
        final Packed vFlags;
        final Packed vDstOffset;
        final Packed vLength;
        final Packed vLoopFirst;
        final Packed vCount;
        final Packed vStride;
        // whether a write or a receive of the slice is relayed (its encoding's name says so)
        boolean relays;

        Share(String instance, Plan plan) {
            this.instance = instance;
            objects = new Renumbering(plan.objectCount(), 256);
            buffers = new Renumbering(plan.bufferCount(), 4);
            rReader = new Packed(256);
            rObject = new Packed(256);
            rBatch = new Packed(256);
            rStaging = new Packed(256);
            rStart = new Packed(256);
            rSpan = new Packed(256);
            rRangeFirst = new Packed(256);
            gStart = new Packed(256);
            gLength = new Packed(256);
            rWriteFirst = new Packed(256);
            wDst = new Packed(1024);
            wBuffer = new Packed(1024);
            wFlags = new Packed(1024, true);
            wSrc = new Packed(1024);
            wDstOffset = new Packed(1024);
            wLength = new Packed(1024);
            wLoopFirst = new Packed(1024);
            lCount = new Packed(64);
            lSrc = new Packed(64);
            lDst = new Packed(64);
            vDst = new Packed(1024);
            vFrom = new Packed(1024);
            vBatch = new Packed(1024);
            vBuffer = new Packed(1024);
            vFlags = new Packed(1024, true);
            vDstOffset = new Packed(1024);
            vLength = new Packed(1024);
            vLoopFirst = new Packed(1024);
            vCount = new Packed(64);
            vStride = new Packed(64);
        }

        void addRead(Plan plan, int i) {
            rReader.add(plan.readReader(i));
            rObject.add(objects.of(plan.readObject(i)));
            rBatch.add(plan.readBatch(i));
            rStaging.add(plan.readStaging(i));
            rStart.add(plan.readStart(i));
            rSpan.add(plan.readSpan(i));
            rRangeFirst.add(gStart.size());
            for (int r = plan.rangeFirst(i); r < plan.rangeEnd(i); r++) {
                gStart.add(plan.rangeStart(r));
                gLength.add(plan.rangeLength(r));
            }
            rWriteFirst.add(wDst.size());
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                wDst.add(plan.writeDst(x));
                wBuffer.add(buffers.of(plan.writeBuffer(x)));
                wFlags.add(plan.writeFlags(x));
                relays |= (plan.writeFlags(x) & Plan.RELAYED) != 0;
                wSrc.add(plan.writeSrc(x));
                wDstOffset.add(plan.writeDstOffset(x));
                wLength.add(plan.writeLength(x));
                wLoopFirst.add(lCount.size());
                for (int l = plan.loopFirst(x); l < plan.loopEnd(x); l++) {
                    lCount.add(plan.loopCount(l));
                    lSrc.add(plan.loopSrcStride(l));
                    lDst.add(plan.loopDstStride(l));
                }
            }
        }

        void addReceive(Plan plan, int i, int x, int from) {
            vDst.add(plan.writeDst(x));
            vFrom.add(from);
            vBatch.add(plan.readBatch(i));
            vBuffer.add(buffers.of(plan.writeBuffer(x)));
            vFlags.add(plan.writeFlags(x));
            relays |= (plan.writeFlags(x) & Plan.RELAYED) != 0;
            vDstOffset.add(plan.writeDstOffset(x));
            vLength.add(plan.writeLength(x));
            vLoopFirst.add(vCount.size());
            for (int l = plan.loopFirst(x); l < plan.loopEnd(x); l++) {
                vCount.add(plan.loopCount(l));
                vStride.add(plan.loopDstStride(l));
            }
        }

        /** Ends the offset columns: each has one entry more than the rows it indexes. */
        void close() {
            rRangeFirst.add(gStart.size());
            rWriteFirst.add(wDst.size());
            wLoopFirst.add(lCount.size());
            vLoopFirst.add(vCount.size());
        }

        /** The row columns in the order {@link Slice#encode()} writes them. */
        List<Packed> inSliceOrder() {
            return List.of(
                    rReader,
                    rObject,
                    rBatch,
                    rStaging,
                    rStart,
                    rSpan,
                    rRangeFirst,
                    gStart,
                    gLength,
                    rWriteFirst,
                    wDst,
                    wBuffer,
                    wFlags,
                    wSrc,
                    wDstOffset,
                    wLength,
                    wLoopFirst,
                    lCount,
                    lSrc,
                    lDst,
                    vDst,
                    vFrom,
                    vBatch,
                    vBuffer,
                    vFlags,
                    vDstOffset,
                    vLength,
                    vLoopFirst,
                    vCount,
                    vStride);
        }
    }
}
