package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.reshard.placement.Mode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What one loader (one engine instance) needs of a plan, and nothing more: the reads its workers
 * make with the writes that follow each, the direct writes its workers receive, and, for its
 * compatibility workers, the writes their nodes receive through a delegate. Column-wise like {@link
 * Plan}; {@link #batch(int)} gives a record view of one batch to execute.
 *
 * <p>Every worker of the plan is a peer (id, node, segment, mode), so every destination, every
 * notify a delegate waits for and every fan-out target is known before anything moves.
 */
public final class Slice {
    // Mode.values() copies the array on every call, and modes are read per write.
    private static final Mode[] MODES = Mode.values();

    private static final String MAGIC = "wr.slice.v1";

    final String instance;
    final String model;
    final String sourceDigest;
    final String targetDigest;
    final String topologyDigest;
    final long batchBytes;
    final int batchCount;

    final String[] peerId;
    final String[] peerInstance;
    final String[] peerNode;
    final String[] peerSegment;
    final byte[] peerMode;
    final String[] buffers;
    final String[] objectIds;
    final long[] objectBytes;

    final int[] readReader;
    final int[] readObject;
    final int[] readBatch;
    final long[] readStaging;
    final long[] readStart;
    final long[] readSpan;
    final int[] readRangeFirst;
    final long[] rangeStart;
    final long[] rangeLength;
    final int[] readWriteFirst;
    final int[] writeDst;
    final int[] writeBuffer;
    final byte[] writeFlags;
    final long[] writeSrc;
    final long[] writeDstOffset;
    final long[] writeLength;
    final int[] writeLoopFirst;
    final long[] loopCount;
    final long[] loopSrcStride;
    final long[] loopDstStride;

    // Writes landing on this instance's workers: direct ones per worker, fan-out ones per node
    // (recvDst is then the delegate; every compatibility worker of the node gets the bytes).
    final int[] recvDst;
    final int[] recvFrom;
    final int[] recvBatch;
    final int[] recvBuffer;
    final byte[] recvFlags;
    final long[] recvDstOffset;
    final long[] recvLength;
    final int[] recvLoopFirst;
    final long[] recvLoopCount;
    final long[] recvLoopStride;

    private Slice(
            String instance,
            String model,
            String sourceDigest,
            String targetDigest,
            String topologyDigest,
            long batchBytes,
            int batchCount,
            String[] peerId,
            String[] peerInstance,
            String[] peerNode,
            String[] peerSegment,
            byte[] peerMode,
            String[] buffers,
            String[] objectIds,
            long[] objectBytes,
            int[] readReader,
            int[] readObject,
            int[] readBatch,
            long[] readStaging,
            long[] readStart,
            long[] readSpan,
            int[] readRangeFirst,
            long[] rangeStart,
            long[] rangeLength,
            int[] readWriteFirst,
            int[] writeDst,
            int[] writeBuffer,
            byte[] writeFlags,
            long[] writeSrc,
            long[] writeDstOffset,
            long[] writeLength,
            int[] writeLoopFirst,
            long[] loopCount,
            long[] loopSrcStride,
            long[] loopDstStride,
            int[] recvDst,
            int[] recvFrom,
            int[] recvBatch,
            int[] recvBuffer,
            byte[] recvFlags,
            long[] recvDstOffset,
            long[] recvLength,
            int[] recvLoopFirst,
            long[] recvLoopCount,
            long[] recvLoopStride) {
        this.instance = instance;
        this.model = model;
        this.sourceDigest = sourceDigest;
        this.targetDigest = targetDigest;
        this.topologyDigest = topologyDigest;
        this.batchBytes = batchBytes;
        this.batchCount = batchCount;
        this.peerId = peerId;
        this.peerInstance = peerInstance;
        this.peerNode = peerNode;
        this.peerSegment = peerSegment;
        this.peerMode = peerMode;
        this.buffers = buffers;
        this.objectIds = objectIds;
        this.objectBytes = objectBytes;
        this.readReader = readReader;
        this.readObject = readObject;
        this.readBatch = readBatch;
        this.readStaging = readStaging;
        this.readStart = readStart;
        this.readSpan = readSpan;
        this.readRangeFirst = readRangeFirst;
        this.rangeStart = rangeStart;
        this.rangeLength = rangeLength;
        this.readWriteFirst = readWriteFirst;
        this.writeDst = writeDst;
        this.writeBuffer = writeBuffer;
        this.writeFlags = writeFlags;
        this.writeSrc = writeSrc;
        this.writeDstOffset = writeDstOffset;
        this.writeLength = writeLength;
        this.writeLoopFirst = writeLoopFirst;
        this.loopCount = loopCount;
        this.loopSrcStride = loopSrcStride;
        this.loopDstStride = loopDstStride;
        this.recvDst = recvDst;
        this.recvFrom = recvFrom;
        this.recvBatch = recvBatch;
        this.recvBuffer = recvBuffer;
        this.recvFlags = recvFlags;
        this.recvDstOffset = recvDstOffset;
        this.recvLength = recvLength;
        this.recvLoopFirst = recvLoopFirst;
        this.recvLoopCount = recvLoopCount;
        this.recvLoopStride = recvLoopStride;
        checkShape();
    }

    private void checkShape() {
        int peers = peerId.length;
        int reads = readReader.length;
        int writes = writeDst.length;
        int recvs = recvDst.length;
        boolean ok =
                peerInstance.length == peers
                        && peerNode.length == peers
                        && peerSegment.length == peers
                        && peerMode.length == peers
                        && objectBytes.length == objectIds.length
                        && readObject.length == reads
                        && readBatch.length == reads
                        && readStaging.length == reads
                        && readStart.length == reads
                        && readSpan.length == reads
                        && readRangeFirst.length == reads + 1
                        && readWriteFirst.length == reads + 1
                        && rangeLength.length == rangeStart.length
                        && readRangeFirst[reads] == rangeStart.length
                        && readWriteFirst[reads] == writes
                        && writeBuffer.length == writes
                        && writeFlags.length == writes
                        && writeSrc.length == writes
                        && writeDstOffset.length == writes
                        && writeLength.length == writes
                        && writeLoopFirst.length == writes + 1
                        && writeLoopFirst[writes] == loopCount.length
                        && loopSrcStride.length == loopCount.length
                        && loopDstStride.length == loopCount.length
                        && recvFrom.length == recvs
                        && recvBatch.length == recvs
                        && recvBuffer.length == recvs
                        && recvFlags.length == recvs
                        && recvDstOffset.length == recvs
                        && recvLength.length == recvs
                        && recvLoopFirst.length == recvs + 1
                        && recvLoopFirst[recvs] == recvLoopCount.length
                        && recvLoopStride.length == recvLoopCount.length;
        if (!ok) {
            throw new CodecException("inconsistent slice columns");
        }
        check(readReader, peers);
        check(writeDst, peers);
        check(recvDst, peers);
        check(recvFrom, peers);
        check(readObject, objectIds.length);
        check(writeBuffer, buffers.length);
        check(recvBuffer, buffers.length);
        check(readBatch, batchCount);
        check(recvBatch, batchCount);
        for (byte m : peerMode) {
            if (m < 0 || m >= Mode.values().length) {
                throw new CodecException("bad peer mode");
            }
        }
        for (int[] first :
                new int[][] {readRangeFirst, readWriteFirst, writeLoopFirst, recvLoopFirst}) {
            for (int i = 1; i < first.length; i++) {
                if (first[0] != 0 || first[i] < first[i - 1]) {
                    throw new CodecException("offset column not monotone");
                }
            }
        }
    }

    private static void check(int[] values, int bound) {
        for (int v : values) {
            if (v < 0 || v >= bound) {
                throw new CodecException("slice index out of range");
            }
        }
    }

    /** The slice of {@code instance}: its reads, their writes, and what its workers receive. */
    public static Slice of(Plan plan, String instance) {
        Map<String, Slice> one = build(plan, Set.of(instance));
        if (one.isEmpty()) {
            throw new IllegalArgumentException(
                    "instance " + instance + " has no worker in the plan");
        }
        return one.get(instance);
    }

    /**
     * The slices of {@code instances}, by instance id, in one pass over the plan: a caller bounds
     * memory by how many it asks for at once, and pays one scan of the plan per group, not per
     * instance.
     */
    public static Map<String, Slice> of(Plan plan, Set<String> instances) {
        Map<String, Slice> out = build(plan, instances);
        for (String instance : instances) {
            if (!out.containsKey(instance)) {
                throw new IllegalArgumentException(
                        "instance " + instance + " has no worker in the plan");
            }
        }
        return out;
    }

    /**
     * The encodings of the slices of {@code instances}, by instance id: byte for byte {@code
     * of(plan, instances).get(i).encode()}, written column by column as varints while the plan is
     * scanned once. No slice is built as columns of ints and longs first, so a group of slices
     * holds a fraction of the memory and the garbage that building and encoding them does.
     */
    public static Map<String, byte[]> encoded(Plan plan, Set<String> instances) {
        int workers = plan.workerCount();
        ByteSink peers = new ByteSink(256 + workers * 64);
        String[] peerInstance = new String[workers];
        byte[] peerMode = new byte[workers];
        peers.varInt(workers);
        for (int w = 0; w < workers; w++) {
            peers.string(plan.workerId(w));
        }
        peers.varInt(workers);
        for (int w = 0; w < workers; w++) {
            peerInstance[w] = plan.workerInstance(w);
            peers.string(peerInstance[w]);
        }
        peers.varInt(workers);
        for (int w = 0; w < workers; w++) {
            peers.string(plan.nodeName(plan.workerNode(w)));
        }
        peers.varInt(workers);
        for (int w = 0; w < workers; w++) {
            peers.string(plan.workerSegment(w));
        }
        peers.varInt(workers);
        for (int w = 0; w < workers; w++) {
            peerMode[w] = (byte) plan.workerMode(w).ordinal();
            peers.u8(peerMode[w]);
        }
        Map<String, Encoder> encoders = new TreeMap<>();
        Encoder[] ofWorker = new Encoder[workers];
        List<List<Encoder>> compatOnNode = new ArrayList<>();
        for (int n = 0; n < plan.nodeCount(); n++) {
            compatOnNode.add(new ArrayList<>(2));
        }
        for (int w = 0; w < workers; w++) {
            if (instances.contains(peerInstance[w])) {
                Encoder e = encoders.computeIfAbsent(peerInstance[w], i -> new Encoder(i, plan));
                ofWorker[w] = e;
                List<Encoder> onNode = compatOnNode.get(plan.workerNode(w));
                if (plan.workerMode(w) == Mode.COMPAT && !onNode.contains(e)) {
                    onNode.add(e);
                }
            }
        }
        for (String instance : instances) {
            if (!encoders.containsKey(instance)) {
                throw new IllegalArgumentException(
                        "instance " + instance + " has no worker in the plan");
            }
        }
        for (int i = 0; i < plan.readCount(); i++) {
            int reader = plan.readReader(i);
            if (ofWorker[reader] != null) {
                ofWorker[reader].addRead(plan, i);
            }
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                int dst = plan.writeDst(x);
                if ((plan.writeFlags(x) & Plan.FANOUT) != 0) {
                    for (Encoder e : compatOnNode.get(plan.workerNode(dst))) {
                        e.addReceive(plan, i, x);
                    }
                } else if (ofWorker[dst] != null) {
                    ofWorker[dst].addReceive(plan, i, x);
                }
            }
        }
        Map<String, byte[]> out = new TreeMap<>();
        for (Map.Entry<String, Encoder> e : encoders.entrySet()) {
            out.put(e.getKey(), e.getValue().encode(plan, peers));
            // Each encoder's columns are garbage once its slice is encoded.
            e.setValue(null);
        }
        return out;
    }

    /** One column while the plan is scanned: its varints and how many. */
    private static final class Column {
        final ByteSink values;
        int count;

        Column(int capacity) {
            values = new ByteSink(capacity);
        }

        void add(long value) {
            values.varLong(value);
            count++;
        }

        void u8(int value) {
            values.u8(value);
            count++;
        }

        void writeTo(ByteSink out) {
            out.varInt(count).raw(values);
        }
    }

    /** One instance's encoded columns while the plan is scanned, as {@link Builder} builds them. */
    private static final class Encoder {
        final String instance;
        final int[] objectIndex;
        final IntList objects = new IntList(256);
        final int[] bufferIndex;
        final IntList buffers = new IntList(4);
        final Column rReader = new Column(256);
        final Column rObject = new Column(256);
        final Column rBatch = new Column(256);
        final Column rStaging = new Column(256);
        final Column rStart = new Column(256);
        final Column rSpan = new Column(256);
        final Column rRangeFirst = new Column(256);
        final Column gStart = new Column(256);
        final Column gLength = new Column(256);
        final Column rWriteFirst = new Column(256);
        final Column wDst = new Column(1024);
        final Column wBuffer = new Column(1024);
        final Column wFlags = new Column(1024);
        final Column wSrc = new Column(1024);
        final Column wDstOffset = new Column(1024);
        final Column wLength = new Column(1024);
        final Column wLoopFirst = new Column(1024);
        final Column lCount = new Column(64);
        final Column lSrc = new Column(64);
        final Column lDst = new Column(64);
        final Column vDst = new Column(1024);
        final Column vFrom = new Column(1024);
        final Column vBatch = new Column(1024);
        final Column vBuffer = new Column(1024);
        final Column vFlags = new Column(1024);
        final Column vDstOffset = new Column(1024);
        final Column vLength = new Column(1024);
        final Column vLoopFirst = new Column(1024);
        final Column vCount = new Column(64);
        final Column vStride = new Column(64);

        Encoder(String instance, Plan plan) {
            this.instance = instance;
            objectIndex = new int[plan.objectCount()];
            bufferIndex = new int[plan.bufferCount()];
            Arrays.fill(objectIndex, -1);
            Arrays.fill(bufferIndex, -1);
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
            rRangeFirst.add(gStart.count);
            for (int r = plan.rangeFirst(i); r < plan.rangeEnd(i); r++) {
                gStart.add(plan.rangeStart(r));
                gLength.add(plan.rangeLength(r));
            }
            rWriteFirst.add(wDst.count);
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                wDst.add(plan.writeDst(x));
                wBuffer.add(buffer(plan.writeBuffer(x)));
                wFlags.u8(plan.writeFlags(x));
                wSrc.add(plan.writeSrc(x));
                wDstOffset.add(plan.writeDstOffset(x));
                wLength.add(plan.writeLength(x));
                wLoopFirst.add(lCount.count);
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
            vFlags.u8(plan.writeFlags(x));
            vDstOffset.add(plan.writeDstOffset(x));
            vLength.add(plan.writeLength(x));
            vLoopFirst.add(vCount.count);
            for (int l = plan.loopFirst(x); l < plan.loopEnd(x); l++) {
                vCount.add(plan.loopCount(l));
                vStride.add(plan.loopDstStride(l));
            }
        }

        /** The same bytes as {@link Slice#encode()} of the slice {@link Builder} would build. */
        byte[] encode(Plan plan, ByteSink peers) {
            rRangeFirst.add(gStart.count);
            rWriteFirst.add(wDst.count);
            wLoopFirst.add(lCount.count);
            vLoopFirst.add(vCount.count);
            Column[] columns = {
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
                vStride
            };
            int size = 1024 + peers.size() + objects.size() * 48;
            for (Column c : columns) {
                size += 5 + c.values.size();
            }
            ByteSink out = new ByteSink(size);
            out.string(MAGIC).string(instance).string(plan.model()).string(plan.sourceDigest());
            out.string(plan.targetDigest()).string(plan.topologyDigest());
            out.varLong(plan.batchBytes()).varInt(plan.batchCount());
            out.raw(peers);
            out.varInt(buffers.size());
            for (int b = 0; b < buffers.size(); b++) {
                out.string(plan.buffer(buffers.get(b)));
            }
            out.varInt(objects.size());
            for (int o = 0; o < objects.size(); o++) {
                out.string(plan.objectId(objects.get(o)));
            }
            out.varInt(objects.size());
            for (int o = 0; o < objects.size(); o++) {
                out.varLong(plan.objectBytes(objects.get(o)));
            }
            for (Column c : columns) {
                c.writeTo(out);
            }
            return out.toByteArray();
        }
    }

    /** Every instance's slice, by instance id, in one pass over the plan. */
    public static Map<String, Slice> all(Plan plan) {
        Set<String> instances = new TreeSet<>();
        for (int w = 0; w < plan.workerCount(); w++) {
            instances.add(plan.workerInstance(w));
        }
        return build(plan, instances);
    }

    private static Map<String, Slice> build(Plan plan, Set<String> instances) {
        int workers = plan.workerCount();
        String[] peerId = new String[workers];
        String[] peerInstance = new String[workers];
        String[] peerNode = new String[workers];
        String[] peerSegment = new String[workers];
        byte[] peerMode = new byte[workers];
        Map<String, Builder> builders = new TreeMap<>();
        Builder[] ofWorker = new Builder[workers];
        List<List<Builder>> compatOnNode = new ArrayList<>();
        for (int n = 0; n < plan.nodeCount(); n++) {
            compatOnNode.add(new ArrayList<>(2));
        }
        for (int w = 0; w < workers; w++) {
            peerId[w] = plan.workerId(w);
            peerInstance[w] = plan.workerInstance(w);
            peerNode[w] = plan.nodeName(plan.workerNode(w));
            peerSegment[w] = plan.workerSegment(w);
            peerMode[w] = (byte) plan.workerMode(w).ordinal();
            if (instances.contains(peerInstance[w])) {
                Builder b = builders.computeIfAbsent(peerInstance[w], i -> new Builder(i, plan));
                ofWorker[w] = b;
                List<Builder> onNode = compatOnNode.get(plan.workerNode(w));
                if (plan.workerMode(w) == Mode.COMPAT && !onNode.contains(b)) {
                    onNode.add(b);
                }
            }
        }
        for (int i = 0; i < plan.readCount(); i++) {
            int reader = plan.readReader(i);
            if (ofWorker[reader] != null) {
                ofWorker[reader].addRead(plan, i);
            }
            for (int x = plan.writeFirst(i); x < plan.writeEnd(i); x++) {
                int dst = plan.writeDst(x);
                if ((plan.writeFlags(x) & Plan.FANOUT) != 0) {
                    for (Builder b : compatOnNode.get(plan.workerNode(dst))) {
                        b.addReceive(plan, i, x);
                    }
                } else if (ofWorker[dst] != null) {
                    ofWorker[dst].addReceive(plan, i, x);
                }
            }
        }
        Map<String, Slice> out = new TreeMap<>();
        for (Builder b : builders.values()) {
            out.put(
                    b.instance,
                    b.build(plan, peerId, peerInstance, peerNode, peerSegment, peerMode));
        }
        return out;
    }

    /** One instance's columns while the plan is scanned. */
    private static final class Builder {
        final String instance;
        // Plan index -> slice index (-1: not in the slice yet), and the plan indexes in order.
        final int[] objectIndex;
        final IntList objects = new IntList(256);
        final int[] bufferIndex;
        final IntList buffers = new IntList(4);
        final IntList rReader = new IntList(256);
        final IntList rObject = new IntList(256);
        final IntList rBatch = new IntList(256);
        final LongList rStaging = new LongList(256);
        final LongList rStart = new LongList(256);
        final LongList rSpan = new LongList(256);
        final IntList rRangeFirst = new IntList(256);
        final LongList gStart = new LongList(256);
        final LongList gLength = new LongList(256);
        final IntList rWriteFirst = new IntList(256);
        final IntList wDst = new IntList(1024);
        final IntList wBuffer = new IntList(1024);
        final IntList wFlags = new IntList(1024);
        final LongList wSrc = new LongList(1024);
        final LongList wDstOffset = new LongList(1024);
        final LongList wLength = new LongList(1024);
        final IntList wLoopFirst = new IntList(1024);
        final LongList lCount = new LongList(64);
        final LongList lSrc = new LongList(64);
        final LongList lDst = new LongList(64);
        final IntList vDst = new IntList(1024);
        final IntList vFrom = new IntList(1024);
        final IntList vBatch = new IntList(1024);
        final IntList vBuffer = new IntList(1024);
        final IntList vFlags = new IntList(1024);
        final LongList vDstOffset = new LongList(1024);
        final LongList vLength = new LongList(1024);
        final IntList vLoopFirst = new IntList(1024);
        final LongList vCount = new LongList(64);
        final LongList vStride = new LongList(64);

        Builder(String instance, Plan plan) {
            this.instance = instance;
            objectIndex = new int[plan.objectCount()];
            bufferIndex = new int[plan.bufferCount()];
            Arrays.fill(objectIndex, -1);
            Arrays.fill(bufferIndex, -1);
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

        Slice build(
                Plan plan,
                String[] peerId,
                String[] peerInstance,
                String[] peerNode,
                String[] peerSegment,
                byte[] peerMode) {
            rRangeFirst.add(gStart.size());
            rWriteFirst.add(wDst.size());
            wLoopFirst.add(lCount.size());
            vLoopFirst.add(vCount.size());
            String[] objectIds = new String[objects.size()];
            long[] objectBytes = new long[objects.size()];
            for (int o = 0; o < objects.size(); o++) {
                objectIds[o] = plan.objectId(objects.get(o));
                objectBytes[o] = plan.objectBytes(objects.get(o));
            }
            String[] bufferNames = new String[buffers.size()];
            for (int b = 0; b < buffers.size(); b++) {
                bufferNames[b] = plan.buffer(buffers.get(b));
            }
            return new Slice(
                    instance,
                    plan.model(),
                    plan.sourceDigest(),
                    plan.targetDigest(),
                    plan.topologyDigest(),
                    plan.batchBytes(),
                    plan.batchCount(),
                    peerId,
                    peerInstance,
                    peerNode,
                    peerSegment,
                    peerMode,
                    bufferNames,
                    objectIds,
                    objectBytes,
                    rReader.toArray(),
                    rObject.toArray(),
                    rBatch.toArray(),
                    rStaging.toArray(),
                    rStart.toArray(),
                    rSpan.toArray(),
                    rRangeFirst.toArray(),
                    gStart.toArray(),
                    gLength.toArray(),
                    rWriteFirst.toArray(),
                    wDst.toArray(),
                    wBuffer.toArray(),
                    toBytes(wFlags),
                    wSrc.toArray(),
                    wDstOffset.toArray(),
                    wLength.toArray(),
                    wLoopFirst.toArray(),
                    lCount.toArray(),
                    lSrc.toArray(),
                    lDst.toArray(),
                    vDst.toArray(),
                    vFrom.toArray(),
                    vBatch.toArray(),
                    vBuffer.toArray(),
                    toBytes(vFlags),
                    vDstOffset.toArray(),
                    vLength.toArray(),
                    vLoopFirst.toArray(),
                    vCount.toArray(),
                    vStride.toArray());
        }
    }

    private static byte[] toBytes(IntList values) {
        byte[] out = new byte[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) values.get(i);
        }
        return out;
    }

    public String instance() {
        return instance;
    }

    public String model() {
        return model;
    }

    public String sourceDigest() {
        return sourceDigest;
    }

    public String targetDigest() {
        return targetDigest;
    }

    public String topologyDigest() {
        return topologyDigest;
    }

    public long batchBytes() {
        return batchBytes;
    }

    public int batchCount() {
        return batchCount;
    }

    public int readCount() {
        return readReader.length;
    }

    public int receiveCount() {
        return recvDst.length;
    }

    // ---- columns, named as Plan names them; peers are the plan's workers, in its order ----

    public int workerCount() {
        return peerId.length;
    }

    public String workerId(int worker) {
        return peerId[worker];
    }

    public String workerInstance(int worker) {
        return peerInstance[worker];
    }

    public String workerNodeName(int worker) {
        return peerNode[worker];
    }

    public String workerSegment(int worker) {
        return peerSegment[worker];
    }

    public Mode workerMode(int worker) {
        return MODES[peerMode[worker]];
    }

    public int bufferCount() {
        return buffers.length;
    }

    public String buffer(int index) {
        return buffers[index];
    }

    public int objectCount() {
        return objectIds.length;
    }

    public String objectId(int object) {
        return objectIds[object];
    }

    public long objectBytes(int object) {
        return objectBytes[object];
    }

    public int readReader(int read) {
        return readReader[read];
    }

    public int readObject(int read) {
        return readObject[read];
    }

    public int readBatch(int read) {
        return readBatch[read];
    }

    public long readStaging(int read) {
        return readStaging[read];
    }

    public long readStart(int read) {
        return readStart[read];
    }

    public long readSpan(int read) {
        return readSpan[read];
    }

    public int rangeFirst(int read) {
        return readRangeFirst[read];
    }

    public int rangeEnd(int read) {
        return readRangeFirst[read + 1];
    }

    public long rangeStart(int range) {
        return rangeStart[range];
    }

    public long rangeLength(int range) {
        return rangeLength[range];
    }

    /** Bytes a read fetches from the store: the sum of its ranges. */
    public long readBytes(int read) {
        long bytes = 0;
        for (int r = readRangeFirst[read]; r < readRangeFirst[read + 1]; r++) {
            bytes += rangeLength[r];
        }
        return bytes;
    }

    public int writeFirst(int read) {
        return readWriteFirst[read];
    }

    public int writeEnd(int read) {
        return readWriteFirst[read + 1];
    }

    public int writeDst(int write) {
        return writeDst[write];
    }

    public int writeBuffer(int write) {
        return writeBuffer[write];
    }

    public int writeFlags(int write) {
        return writeFlags[write];
    }

    public long writeSrc(int write) {
        return writeSrc[write];
    }

    public long writeDstOffset(int write) {
        return writeDstOffset[write];
    }

    public long writeLength(int write) {
        return writeLength[write];
    }

    public int loopFirst(int write) {
        return writeLoopFirst[write];
    }

    public int loopEnd(int write) {
        return writeLoopFirst[write + 1];
    }

    public long loopCount(int loop) {
        return loopCount[loop];
    }

    public long loopSrcStride(int loop) {
        return loopSrcStride[loop];
    }

    public long loopDstStride(int loop) {
        return loopDstStride[loop];
    }

    public long writeBytes(int write) {
        long bytes = writeLength[write];
        for (int l = writeLoopFirst[write]; l < writeLoopFirst[write + 1]; l++) {
            bytes *= loopCount[l];
        }
        return bytes;
    }

    /** Destination worker of a received write (for a fan-out write, the node's delegate). */
    public int receiveDst(int receive) {
        return recvDst[receive];
    }

    /** The worker whose read carries the received write. */
    public int receiveFrom(int receive) {
        return recvFrom[receive];
    }

    public int receiveBatch(int receive) {
        return recvBatch[receive];
    }

    public int receiveBuffer(int receive) {
        return recvBuffer[receive];
    }

    public int receiveFlags(int receive) {
        return recvFlags[receive];
    }

    public long receiveDstOffset(int receive) {
        return recvDstOffset[receive];
    }

    public long receiveLength(int receive) {
        return recvLength[receive];
    }

    public int receiveLoopFirst(int receive) {
        return recvLoopFirst[receive];
    }

    public int receiveLoopEnd(int receive) {
        return recvLoopFirst[receive + 1];
    }

    public long receiveLoopCount(int loop) {
        return recvLoopCount[loop];
    }

    public long receiveLoopStride(int loop) {
        return recvLoopStride[loop];
    }

    public long receiveBytes(int receive) {
        long bytes = recvLength[receive];
        for (int l = recvLoopFirst[receive]; l < recvLoopFirst[receive + 1]; l++) {
            bytes *= recvLoopCount[l];
        }
        return bytes;
    }

    /** This instance's worker ids, sorted. */
    public List<String> workers() {
        List<String> out = new ArrayList<>();
        for (int p = 0; p < peerId.length; p++) {
            if (peerInstance[p].equals(instance)) {
                out.add(peerId[p]);
            }
        }
        return out;
    }

    /** Staging bytes a reader of this slice needs for one batch (the watermark admits two). */
    public long stagingBytesPerBatch() {
        long max = 0;
        for (int i = 0; i < readReader.length; i++) {
            max = Math.max(max, readStaging[i] + readSpan[i]);
        }
        return max;
    }

    /**
     * One read this loader makes, with the writes that follow it: fetch each range ({@code
     * getIntoRanges}) into the reader's staging for this batch at {@link #stagingOffsetOf}, then
     * issue the writes. Offsets are relative to the reader's staging area of the batch.
     */
    public record ReadOp(
            String model,
            String reader,
            String fragment,
            long objectBytes,
            long spanStart,
            long spanLength,
            long stagingOffset,
            long[] rangeStarts,
            long[] rangeLengths,
            List<WriteOp> writes) {

        /** Staging offset of an object byte. */
        public long stagingOffsetOf(long objectOffset) {
            return stagingOffset + (objectOffset - spanStart);
        }

        /** The store key of the object in a generation. */
        public String key(long generation) {
            return ObjectKeys.key(model, generation, fragment);
        }
    }

    /**
     * A one-sided write from the reader's staging: {@code length} bytes repeated by the loops
     * (outermost first). {@code scatter} (the reader writes its own buffer) is the local copy from
     * staging into the final buffer; {@code remote} means another node (tcp/RDMA), otherwise the
     * local transport; {@code withNotify} is a write with notify into a node delegate; {@code
     * fanout} means the delegate copies the bytes to every other compatibility worker on its node.
     */
    public record WriteOp(
            String toWorker,
            String toNode,
            String toSegment,
            String buffer,
            long stagingOffset,
            long dstOffset,
            long length,
            long[] loopCounts,
            long[] srcStrides,
            long[] dstStrides,
            boolean remote,
            boolean withNotify,
            boolean fanout,
            boolean scatter) {

        public long bytes() {
            long bytes = length;
            for (long c : loopCounts) {
                bytes *= c;
            }
            return bytes;
        }
    }

    /**
     * Bytes that land on this instance: a direct write to {@code worker}, or a write into the node
     * delegate {@code worker} that every compatibility worker of {@code node} ends up holding.
     */
    public record ReceiveOp(
            String worker,
            String node,
            String fromWorker,
            String buffer,
            long dstOffset,
            long length,
            long[] loopCounts,
            long[] dstStrides,
            boolean withNotify,
            boolean fanout) {}

    /** A delegate's duty after a batch's notifies arrived: copy these bytes to these workers. */
    public record FanoutOp(
            String delegate,
            List<String> targets,
            String buffer,
            long dstOffset,
            long length,
            long[] loopCounts,
            long[] dstStrides) {}

    /**
     * One batch to execute: reads (then their writes), what lands here, how many notifies each
     * local delegate waits for, and the fan-out copies local delegates make afterwards.
     */
    public record Batch(
            int index,
            List<ReadOp> reads,
            List<ReceiveOp> receives,
            Map<String, Integer> notifies,
            List<FanoutOp> fanouts) {}

    public Batch batch(int index) {
        if (index < 0 || index >= batchCount) {
            throw new IndexOutOfBoundsException("batch " + index + " of " + batchCount);
        }
        List<ReadOp> reads = new ArrayList<>();
        for (int i = 0; i < readReader.length; i++) {
            if (readBatch[i] == index) {
                reads.add(read(i));
            }
        }
        List<ReceiveOp> receives = new ArrayList<>();
        Map<String, Integer> notifies = new LinkedHashMap<>();
        List<FanoutOp> fanouts = new ArrayList<>();
        for (int v = 0; v < recvDst.length; v++) {
            if (recvBatch[v] != index) {
                continue;
            }
            ReceiveOp op = receive(v);
            receives.add(op);
            int delegate = recvDst[v];
            if (peerInstance[delegate].equals(instance)) {
                if (op.withNotify()) {
                    notifies.merge(op.worker(), 1, Integer::sum);
                }
                if (op.fanout()) {
                    List<String> targets = fanoutTargets(delegate);
                    if (!targets.isEmpty()) {
                        fanouts.add(
                                new FanoutOp(
                                        op.worker(),
                                        targets,
                                        op.buffer(),
                                        op.dstOffset(),
                                        op.length(),
                                        op.loopCounts(),
                                        op.dstStrides()));
                    }
                }
            }
        }
        return new Batch(index, reads, receives, notifies, fanouts);
    }

    /** Compatibility workers on the delegate's node, other than the delegate. */
    private List<String> fanoutTargets(int delegate) {
        List<String> targets = new ArrayList<>();
        for (int p = 0; p < peerId.length; p++) {
            if (p != delegate
                    && peerMode[p] == Mode.COMPAT.ordinal()
                    && peerNode[p].equals(peerNode[delegate])) {
                targets.add(peerId[p]);
            }
        }
        return targets;
    }

    ReadOp read(int i) {
        int first = readRangeFirst[i];
        int end = readRangeFirst[i + 1];
        List<WriteOp> writes = new ArrayList<>(readWriteFirst[i + 1] - readWriteFirst[i]);
        int reader = readReader[i];
        for (int x = readWriteFirst[i]; x < readWriteFirst[i + 1]; x++) {
            int lf = writeLoopFirst[x];
            int le = writeLoopFirst[x + 1];
            int dst = writeDst[x];
            writes.add(
                    new WriteOp(
                            peerId[dst],
                            peerNode[dst],
                            peerSegment[dst],
                            buffers[writeBuffer[x]],
                            readStaging[i] + writeSrc[x],
                            writeDstOffset[x],
                            writeLength[x],
                            Arrays.copyOfRange(loopCount, lf, le),
                            Arrays.copyOfRange(loopSrcStride, lf, le),
                            Arrays.copyOfRange(loopDstStride, lf, le),
                            !peerNode[dst].equals(peerNode[reader]),
                            (writeFlags[x] & Plan.NOTIFY) != 0,
                            (writeFlags[x] & Plan.FANOUT) != 0,
                            dst == reader));
        }
        return new ReadOp(
                model,
                peerId[reader],
                objectIds[readObject[i]],
                objectBytes[readObject[i]],
                readStart[i],
                readSpan[i],
                readStaging[i],
                Arrays.copyOfRange(rangeStart, first, end),
                Arrays.copyOfRange(rangeLength, first, end),
                writes);
    }

    ReceiveOp receive(int v) {
        int lf = recvLoopFirst[v];
        int le = recvLoopFirst[v + 1];
        int dst = recvDst[v];
        return new ReceiveOp(
                peerId[dst],
                peerNode[dst],
                peerId[recvFrom[v]],
                buffers[recvBuffer[v]],
                recvDstOffset[v],
                recvLength[v],
                Arrays.copyOfRange(recvLoopCount, lf, le),
                Arrays.copyOfRange(recvLoopStride, lf, le),
                (recvFlags[v] & Plan.NOTIFY) != 0,
                (recvFlags[v] & Plan.FANOUT) != 0);
    }

    public byte[] encode() {
        ByteSink out = new ByteSink(256 + writeDst.length * 12 + recvDst.length * 10);
        out.string(MAGIC).string(instance).string(model).string(sourceDigest);
        out.string(targetDigest).string(topologyDigest).varLong(batchBytes).varInt(batchCount);
        Columns.strings(out, peerId);
        Columns.strings(out, peerInstance);
        Columns.strings(out, peerNode);
        Columns.strings(out, peerSegment);
        Columns.bytes(out, peerMode);
        Columns.strings(out, buffers);
        Columns.strings(out, objectIds);
        Columns.longs(out, objectBytes);
        Columns.ints(out, readReader);
        Columns.ints(out, readObject);
        Columns.ints(out, readBatch);
        Columns.longs(out, readStaging);
        Columns.longs(out, readStart);
        Columns.longs(out, readSpan);
        Columns.ints(out, readRangeFirst);
        Columns.longs(out, rangeStart);
        Columns.longs(out, rangeLength);
        Columns.ints(out, readWriteFirst);
        Columns.ints(out, writeDst);
        Columns.ints(out, writeBuffer);
        Columns.bytes(out, writeFlags);
        Columns.longs(out, writeSrc);
        Columns.longs(out, writeDstOffset);
        Columns.longs(out, writeLength);
        Columns.ints(out, writeLoopFirst);
        Columns.longs(out, loopCount);
        Columns.longs(out, loopSrcStride);
        Columns.longs(out, loopDstStride);
        Columns.ints(out, recvDst);
        Columns.ints(out, recvFrom);
        Columns.ints(out, recvBatch);
        Columns.ints(out, recvBuffer);
        Columns.bytes(out, recvFlags);
        Columns.longs(out, recvDstOffset);
        Columns.longs(out, recvLength);
        Columns.ints(out, recvLoopFirst);
        Columns.longs(out, recvLoopCount);
        Columns.longs(out, recvLoopStride);
        return out.toByteArray();
    }

    public static Slice decode(byte[] bytes) {
        ByteSource in = new ByteSource(bytes);
        in.expectMagic(MAGIC);
        Slice slice =
                new Slice(
                        in.string(),
                        in.string(),
                        in.string(),
                        in.string(),
                        in.string(),
                        in.varLong(),
                        in.varInt(),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.bytes(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.longs(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.longs(in),
                        Columns.longs(in),
                        Columns.longs(in),
                        Columns.ints(in),
                        Columns.longs(in),
                        Columns.longs(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.bytes(in),
                        Columns.longs(in),
                        Columns.longs(in),
                        Columns.longs(in),
                        Columns.ints(in),
                        Columns.longs(in),
                        Columns.longs(in),
                        Columns.longs(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.bytes(in),
                        Columns.longs(in),
                        Columns.longs(in),
                        Columns.ints(in),
                        Columns.longs(in),
                        Columns.longs(in));
        in.expectEnd();
        return slice;
    }

    @Override
    public String toString() {
        return "Slice[instance="
                + instance
                + ", reads="
                + readReader.length
                + ", writes="
                + writeDst.length
                + ", receives="
                + recvDst.length
                + "]";
    }
}
