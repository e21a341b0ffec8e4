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
 * the delegate's node). A loader's share is gathered column by column either as arrays, to build
 * {@link Slice}s, or straight as the varints of {@link Slice#encode()}, to encode them without
 * building them.
 */
final class SliceCutter {
    private SliceCutter() {}

    static Map<String, Slice> slices(Plan plan, Set<String> instances) {
        Columns.Peers peers = Columns.Peers.of(plan);
        Map<String, Slice> out = new TreeMap<>();
        for (Share<Held> share : scan(plan, instances, Held.FACTORY).values()) {
            out.put(share.instance, build(plan, peers, share));
        }
        return out;
    }

    static Map<String, byte[]> encodings(Plan plan, Set<String> instances) {
        ByteSink peers = new ByteSink(256 + plan.workerCount() * 64);
        Columns.Peers.of(plan).encode(peers);
        Map<String, Share<Packed>> shares = scan(plan, instances, Packed.FACTORY);
        Map<String, byte[]> out = new TreeMap<>();
        for (Map.Entry<String, Share<Packed>> e : shares.entrySet()) {
            out.put(e.getKey(), encode(plan, peers, e.getValue()));
            // Each share's columns are garbage once its slice is encoded.
            e.setValue(null);
        }
        return out;
    }

    private static <C extends Column> Map<String, Share<C>> scan(
            Plan plan, Set<String> instances, ColumnFactory<C> columns) {
        int workers = plan.workerCount();
        Map<String, Share<C>> shares = new TreeMap<>();
        List<Share<C>> ofWorker = new ArrayList<>(workers);
        List<List<Share<C>>> compatOnNode = new ArrayList<>();
        for (int n = 0; n < plan.nodeCount(); n++) {
            compatOnNode.add(new ArrayList<>(2));
        }
        for (int w = 0; w < workers; w++) {
            Share<C> share = null;
            if (instances.contains(plan.workerInstance(w))) {
                share =
                        shares.computeIfAbsent(
                                plan.workerInstance(w), i -> new Share<>(i, plan, columns));
                List<Share<C>> onNode = compatOnNode.get(plan.workerNode(w));
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
            Share<C> reader = ofWorker.get(plan.readReader(i));
            if (reader != null) {
                reader.addRead(plan, i);
            }
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                int dst = plan.writeDst(x);
                if ((plan.writeFlags(x) & Plan.FANOUT) != 0) {
                    for (Share<C> share : compatOnNode.get(plan.workerNode(dst))) {
                        share.addReceive(plan, i, x);
                    }
                } else if (ofWorker.get(dst) != null) {
                    ofWorker.get(dst).addReceive(plan, i, x);
                }
            }
        }
        return shares;
    }

    private static Slice build(Plan plan, Columns.Peers peers, Share<Held> s) {
        s.close();
        String[] objectIds = new String[s.objects.size()];
        long[] objectBytes = new long[s.objects.size()];
        for (int o = 0; o < objectIds.length; o++) {
            objectIds[o] = plan.objectId(s.objects.get(o));
            objectBytes[o] = plan.objectBytes(s.objects.get(o));
        }
        String[] buffers = new String[s.buffers.size()];
        for (int b = 0; b < buffers.length; b++) {
            buffers[b] = plan.buffer(s.buffers.get(b));
        }
        return new Slice(
                s.instance,
                plan.header,
                peers,
                buffers,
                objectIds,
                objectBytes,
                new Columns.Reads(
                        s.rObject.ints(),
                        s.rReader.ints(),
                        s.rBatch.ints(),
                        s.rStaging.longs(),
                        s.rStart.longs(),
                        s.rSpan.longs(),
                        s.rRangeFirst.ints(),
                        s.gStart.longs(),
                        s.gLength.longs(),
                        s.rWriteFirst.ints()),
                new Columns.Writes(
                        s.wDst.ints(),
                        s.wBuffer.ints(),
                        s.wFlags.bytes(),
                        s.wSrc.longs(),
                        s.wDstOffset.longs(),
                        s.wLength.longs(),
                        s.wLoopFirst.ints(),
                        new Columns.Loops(s.lCount.longs(), s.lSrc.longs(), s.lDst.longs())),
                new Columns.Receives(
                        s.vDst.ints(),
                        s.vFrom.ints(),
                        s.vBatch.ints(),
                        s.vBuffer.ints(),
                        s.vFlags.bytes(),
                        s.vDstOffset.longs(),
                        s.vLength.longs(),
                        s.vLoopFirst.ints(),
                        s.vCount.longs(),
                        s.vStride.longs()));
    }

    /** The same bytes as {@link Slice#encode()} of the slice {@link #build} would build. */
    private static byte[] encode(Plan plan, ByteSink peers, Share<Packed> s) {
        s.close();
        List<Packed> columns = s.inSliceOrder();
        int size = 1024 + peers.size() + s.objects.size() * 48;
        for (Packed c : columns) {
            size += 5 + c.values.size();
        }
        ByteSink out = new ByteSink(size);
        out.string(Slice.MAGIC).string(s.instance);
        plan.header.encode(out);
        out.raw(peers);
        out.varInt(s.buffers.size());
        for (int b = 0; b < s.buffers.size(); b++) {
            out.string(plan.buffer(s.buffers.get(b)));
        }
        out.varInt(s.objects.size());
        for (int o = 0; o < s.objects.size(); o++) {
            out.string(plan.objectId(s.objects.get(o)));
        }
        out.varInt(s.objects.size());
        for (int o = 0; o < s.objects.size(); o++) {
            out.varLong(plan.objectBytes(s.objects.get(o)));
        }
        for (Packed c : columns) {
            c.writeTo(out);
        }
        return out.toByteArray();
    }

    /** One column of a share while the plan is scanned. */
    interface Column {
        void add(long value);

        int size();
    }

    /** Makes the columns of a share: int, long and byte columns, with a first capacity. */
    interface ColumnFactory<C extends Column> {
        C make(Kind kind, int capacity);
    }

    enum Kind {
        INT,
        LONG,
        BYTE
    }

    /** A column kept as values, to become an array of the slice. */
    static final class Held implements Column {
        static final ColumnFactory<Held> FACTORY = Held::new;

        private final IntList ints;
        private final LongList longs;

        Held(Kind kind, int capacity) {
            ints = kind == Kind.LONG ? null : new IntList(capacity);
            longs = kind == Kind.LONG ? new LongList(capacity) : null;
        }

        @Override
        public void add(long value) {
            if (longs != null) {
                longs.add(value);
            } else {
                ints.add((int) value);
            }
        }

        @Override
        public int size() {
            return longs != null ? longs.size() : ints.size();
        }

        int[] ints() {
            return ints.toArray();
        }

        long[] longs() {
            return longs.toArray();
        }

        byte[] bytes() {
            byte[] out = new byte[ints.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = (byte) ints.get(i);
            }
            return out;
        }
    }

    /** A column written as it grows, in its encoding: a varint (or u8) per value, and a count. */
    static final class Packed implements Column {
        static final ColumnFactory<Packed> FACTORY = Packed::new;

        final ByteSink values;
        private final boolean u8;
        private int count;

        Packed(Kind kind, int capacity) {
            values = new ByteSink(capacity);
            u8 = kind == Kind.BYTE;
        }

        @Override
        public void add(long value) {
            if (u8) {
                values.u8((int) value);
            } else {
                values.varLong(value);
            }
            count++;
        }

        @Override
        public int size() {
            return count;
        }

        void writeTo(ByteSink out) {
            out.varInt(count).raw(values);
        }
    }

    /** One loader's columns while the plan is scanned. */
    static final class Share<C extends Column> {
        final String instance;
        // Plan index -> slice index (-1: not in the slice yet), and the plan indexes in order.
        final int[] objectIndex;
        final IntList objects = new IntList(256);
        final int[] bufferIndex;
        final IntList buffers = new IntList(4);
        final C rReader;
        final C rObject;
        final C rBatch;
        final C rStaging;
        final C rStart;
        final C rSpan;
        final C rRangeFirst;
        final C gStart;
        final C gLength;
        final C rWriteFirst;
        final C wDst;
        final C wBuffer;
        final C wFlags;
        final C wSrc;
        final C wDstOffset;
        final C wLength;
        final C wLoopFirst;
        final C lCount;
        final C lSrc;
        final C lDst;
        final C vDst;
        final C vFrom;
        final C vBatch;
        final C vBuffer;
        final C vFlags;
        final C vDstOffset;
        final C vLength;
        final C vLoopFirst;
        final C vCount;
        final C vStride;

        Share(String instance, Plan plan, ColumnFactory<C> f) {
            this.instance = instance;
            objectIndex = new int[plan.objectCount()];
            bufferIndex = new int[plan.bufferCount()];
            Arrays.fill(objectIndex, -1);
            Arrays.fill(bufferIndex, -1);
            rReader = f.make(Kind.INT, 256);
            rObject = f.make(Kind.INT, 256);
            rBatch = f.make(Kind.INT, 256);
            rStaging = f.make(Kind.LONG, 256);
            rStart = f.make(Kind.LONG, 256);
            rSpan = f.make(Kind.LONG, 256);
            rRangeFirst = f.make(Kind.INT, 256);
            gStart = f.make(Kind.LONG, 256);
            gLength = f.make(Kind.LONG, 256);
            rWriteFirst = f.make(Kind.INT, 256);
            wDst = f.make(Kind.INT, 1024);
            wBuffer = f.make(Kind.INT, 1024);
            wFlags = f.make(Kind.BYTE, 1024);
            wSrc = f.make(Kind.LONG, 1024);
            wDstOffset = f.make(Kind.LONG, 1024);
            wLength = f.make(Kind.LONG, 1024);
            wLoopFirst = f.make(Kind.INT, 1024);
            lCount = f.make(Kind.LONG, 64);
            lSrc = f.make(Kind.LONG, 64);
            lDst = f.make(Kind.LONG, 64);
            vDst = f.make(Kind.INT, 1024);
            vFrom = f.make(Kind.INT, 1024);
            vBatch = f.make(Kind.INT, 1024);
            vBuffer = f.make(Kind.INT, 1024);
            vFlags = f.make(Kind.BYTE, 1024);
            vDstOffset = f.make(Kind.LONG, 1024);
            vLength = f.make(Kind.LONG, 1024);
            vLoopFirst = f.make(Kind.INT, 1024);
            vCount = f.make(Kind.LONG, 64);
            vStride = f.make(Kind.LONG, 64);
        }

        private int buffer(int planBuffer) {
            if (bufferIndex[planBuffer] < 0) {
                bufferIndex[planBuffer] = buffers.size();
                buffers.add(planBuffer);
            }
            return bufferIndex[planBuffer];
        }

        private int object(int planObject) {
            if (objectIndex[planObject] < 0) {
                objectIndex[planObject] = objects.size();
                objects.add(planObject);
            }
            return objectIndex[planObject];
        }

        void addRead(Plan plan, int i) {
            rReader.add(plan.readReader(i));
            rObject.add(object(plan.readObject(i)));
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
                wBuffer.add(buffer(plan.writeBuffer(x)));
                wFlags.add(plan.writeFlags(x));
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

        void addReceive(Plan plan, int i, int x) {
            vDst.add(plan.writeDst(x));
            vFrom.add(plan.readReader(i));
            vBatch.add(plan.readBatch(i));
            vBuffer.add(buffer(plan.writeBuffer(x)));
            vFlags.add(plan.writeFlags(x));
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
        List<C> inSliceOrder() {
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
