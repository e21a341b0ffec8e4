package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.codec.Digests;
import io.weightrelay.reshard.placement.Mode;
import java.util.Arrays;

/**
 * A routing plan, stored column-wise in primitive arrays so a trillion-parameter model with
 * hundreds of workers fits in a few hundred megabytes. Immutable: arrays never leave the instance.
 *
 * <p>A <em>read</em> is one span of one stored object, read by one reader worker as one or more
 * disjoint byte ranges into its staging buffer (at {@code stagingOffset + (objectOffset -
 * spanStart)}) in one batch. Each read owns a list of <em>writes</em>: one-sided writes from the
 * reader's staging to a destination worker's buffer, as a contiguous run of {@code length} bytes
 * repeated by outer loops (outermost first; each loop has a count, a source stride and a
 * destination stride). A write whose destination is the reader itself is a local scatter. A write
 * flagged {@link #FANOUT} lands in a node delegate, which then copies the same bytes to the same
 * offsets in every other compatibility worker on its node; {@link #NOTIFY} marks writes that must
 * bump the delegate's notify counter.
 */
public final class Plan {
    // Mode.values() copies the array on every call, and modes are read per write.
    private static final Mode[] MODES = Mode.values();

    /** The destination is a node delegate that fans the bytes out on its node. */
    public static final int FANOUT = 1;

    /** The write must notify its target (write with notify); the reader is someone else. */
    public static final int NOTIFY = 2;

    private static final String MAGIC = "wr.plan.v1";

    final String model;
    final String sourceDigest;
    final String targetDigest;
    final String topologyDigest;
    final long batchBytes;
    final int batchCount;

    final String[] nodeNames;
    final int[] nodeNics;
    final double[] nodeGbps;
    final String[] trainerNames;
    final int[] trainerNics;
    final double[] trainerGbps;

    final String[] workerId;
    final String[] workerInstance;
    final String[] workerSegment;
    final int[] workerNode;
    final int[] workerNicFirst;
    final int[] workerNicCount;
    final byte[] workerMode;

    final String[] buffers;
    final String[] tensorNames;
    final String[] objectIds;
    final long[] objectBytes;
    final int[] objectTensor;
    final int[] objectTrainer;

    final int[] readObject;
    final int[] readReader;
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

    Plan(
            String model,
            String sourceDigest,
            String targetDigest,
            String topologyDigest,
            long batchBytes,
            int batchCount,
            String[] nodeNames,
            int[] nodeNics,
            double[] nodeGbps,
            String[] trainerNames,
            int[] trainerNics,
            double[] trainerGbps,
            String[] workerId,
            String[] workerInstance,
            String[] workerSegment,
            int[] workerNode,
            int[] workerNicFirst,
            int[] workerNicCount,
            byte[] workerMode,
            String[] buffers,
            String[] tensorNames,
            String[] objectIds,
            long[] objectBytes,
            int[] objectTensor,
            int[] objectTrainer,
            int[] readObject,
            int[] readReader,
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
            long[] loopDstStride) {
        this.model = model;
        this.sourceDigest = sourceDigest;
        this.targetDigest = targetDigest;
        this.topologyDigest = topologyDigest;
        this.batchBytes = batchBytes;
        this.batchCount = batchCount;
        this.nodeNames = nodeNames;
        this.nodeNics = nodeNics;
        this.nodeGbps = nodeGbps;
        this.trainerNames = trainerNames;
        this.trainerNics = trainerNics;
        this.trainerGbps = trainerGbps;
        this.workerId = workerId;
        this.workerInstance = workerInstance;
        this.workerSegment = workerSegment;
        this.workerNode = workerNode;
        this.workerNicFirst = workerNicFirst;
        this.workerNicCount = workerNicCount;
        this.workerMode = workerMode;
        this.buffers = buffers;
        this.tensorNames = tensorNames;
        this.objectIds = objectIds;
        this.objectBytes = objectBytes;
        this.objectTensor = objectTensor;
        this.objectTrainer = objectTrainer;
        this.readObject = readObject;
        this.readReader = readReader;
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
        checkShape();
    }

    private void checkShape() {
        int workers = workerId.length;
        int reads = readObject.length;
        int writes = writeDst.length;
        boolean ok =
                nodeNics.length == nodeNames.length
                        && nodeGbps.length == nodeNames.length
                        && trainerNics.length == trainerNames.length
                        && trainerGbps.length == trainerNames.length
                        && workerInstance.length == workers
                        && workerSegment.length == workers
                        && workerNode.length == workers
                        && workerNicFirst.length == workers
                        && workerNicCount.length == workers
                        && workerMode.length == workers
                        && objectBytes.length == objectIds.length
                        && objectTensor.length == objectIds.length
                        && objectTrainer.length == objectIds.length
                        && readReader.length == reads
                        && readBatch.length == reads
                        && readStaging.length == reads
                        && readStart.length == reads
                        && readSpan.length == reads
                        && readRangeFirst.length == reads + 1
                        && readWriteFirst.length == reads + 1
                        && rangeLength.length == rangeStart.length
                        && writeBuffer.length == writes
                        && writeFlags.length == writes
                        && writeSrc.length == writes
                        && writeDstOffset.length == writes
                        && writeLength.length == writes
                        && writeLoopFirst.length == writes + 1
                        && loopSrcStride.length == loopCount.length
                        && loopDstStride.length == loopCount.length
                        && readRangeFirst[reads] == rangeStart.length
                        && readWriteFirst[reads] == writes
                        && writeLoopFirst[writes] == loopCount.length;
        if (!ok) {
            throw new CodecException("inconsistent plan columns");
        }
        checkIndexes(workerNode, nodeNames.length, "worker node");
        checkIndexes(objectTensor, tensorNames.length, "object tensor");
        checkIndexes(objectTrainer, trainerNames.length, "object trainer");
        checkIndexes(readObject, objectIds.length, "read object");
        checkIndexes(readReader, workers, "reader");
        checkIndexes(writeDst, workers, "write destination");
        checkIndexes(writeBuffer, buffers.length, "write buffer");
        checkMonotone(readRangeFirst);
        checkMonotone(readWriteFirst);
        checkMonotone(writeLoopFirst);
        for (int b : readBatch) {
            if (b < 0 || b >= batchCount) {
                throw new CodecException("batch index out of range");
            }
        }
        for (byte m : workerMode) {
            if (m < 0 || m >= Mode.values().length) {
                throw new CodecException("bad worker mode");
            }
        }
    }

    private static void checkIndexes(int[] values, int bound, String what) {
        for (int v : values) {
            if (v < 0 || v >= bound) {
                throw new CodecException(what + " index out of range");
            }
        }
    }

    private static void checkMonotone(int[] first) {
        if (first[0] != 0) {
            throw new CodecException("offset column must start at 0");
        }
        for (int i = 1; i < first.length; i++) {
            if (first[i] < first[i - 1]) {
                throw new CodecException("offset column not monotone");
            }
        }
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

    public int nodeCount() {
        return nodeNames.length;
    }

    public String nodeName(int node) {
        return nodeNames[node];
    }

    public int nodeNics(int node) {
        return nodeNics[node];
    }

    public double nodeGbps(int node) {
        return nodeGbps[node];
    }

    public int trainerCount() {
        return trainerNames.length;
    }

    public String trainerName(int trainer) {
        return trainerNames[trainer];
    }

    public int trainerNics(int trainer) {
        return trainerNics[trainer];
    }

    public double trainerGbps(int trainer) {
        return trainerGbps[trainer];
    }

    public int workerCount() {
        return workerId.length;
    }

    public String workerId(int worker) {
        return workerId[worker];
    }

    public String workerInstance(int worker) {
        return workerInstance[worker];
    }

    public String workerSegment(int worker) {
        return workerSegment[worker];
    }

    public int workerNode(int worker) {
        return workerNode[worker];
    }

    public int workerNicFirst(int worker) {
        return workerNicFirst[worker];
    }

    public int workerNicCount(int worker) {
        return workerNicCount[worker];
    }

    public Mode workerMode(int worker) {
        return MODES[workerMode[worker]];
    }

    public int bufferCount() {
        return buffers.length;
    }

    public String buffer(int index) {
        return buffers[index];
    }

    public int tensorCount() {
        return tensorNames.length;
    }

    public String tensorName(int tensor) {
        return tensorNames[tensor];
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

    public int objectTensor(int object) {
        return objectTensor[object];
    }

    public int objectTrainer(int object) {
        return objectTrainer[object];
    }

    public int readCount() {
        return readObject.length;
    }

    public int readObject(int read) {
        return readObject[read];
    }

    public int readReader(int read) {
        return readReader[read];
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

    public int writeFirst(int read) {
        return readWriteFirst[read];
    }

    public int writeEnd(int read) {
        return readWriteFirst[read + 1];
    }

    public int writeCount() {
        return writeDst.length;
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

    /** Source offset relative to the read's span start (its staging offset). */
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

    /** Bytes a write moves: its run length times every loop count. */
    public long writeBytes(int write) {
        long bytes = writeLength[write];
        for (int l = writeLoopFirst[write]; l < writeLoopFirst[write + 1]; l++) {
            bytes *= loopCount[l];
        }
        return bytes;
    }

    /** Bytes a read fetches from the store: the sum of its ranges. */
    public long readBytes(int read) {
        long bytes = 0;
        for (int r = readRangeFirst[read]; r < readRangeFirst[read + 1]; r++) {
            bytes += rangeLength[r];
        }
        return bytes;
    }

    /** Index of a worker id, or -1. */
    public int workerIndex(String id) {
        int index = Arrays.binarySearch(workerId, id);
        return index >= 0 ? index : -1;
    }

    /** SHA-256 of the encoding: equal plans have equal digests. */
    public String digest() {
        return Digests.sha256Hex(encode());
    }

    public byte[] encode() {
        ByteSink out = new ByteSink(64 + writeDst.length * 12 + readObject.length * 24);
        out.string(MAGIC).string(model).string(sourceDigest).string(targetDigest);
        out.string(topologyDigest).varLong(batchBytes).varInt(batchCount);
        Columns.strings(out, nodeNames);
        Columns.ints(out, nodeNics);
        Columns.doubles(out, nodeGbps);
        Columns.strings(out, trainerNames);
        Columns.ints(out, trainerNics);
        Columns.doubles(out, trainerGbps);
        Columns.strings(out, workerId);
        Columns.strings(out, workerInstance);
        Columns.strings(out, workerSegment);
        Columns.ints(out, workerNode);
        Columns.ints(out, workerNicFirst);
        Columns.ints(out, workerNicCount);
        Columns.bytes(out, workerMode);
        Columns.strings(out, buffers);
        Columns.strings(out, tensorNames);
        Columns.strings(out, objectIds);
        Columns.longs(out, objectBytes);
        Columns.ints(out, objectTensor);
        Columns.ints(out, objectTrainer);
        Columns.ints(out, readObject);
        Columns.ints(out, readReader);
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
        return out.toByteArray();
    }

    public static Plan decode(byte[] bytes) {
        ByteSource in = new ByteSource(bytes);
        in.expectMagic(MAGIC);
        Plan plan =
                new Plan(
                        in.string(),
                        in.string(),
                        in.string(),
                        in.string(),
                        in.varLong(),
                        in.varInt(),
                        Columns.strings(in),
                        Columns.ints(in),
                        Columns.doubles(in),
                        Columns.strings(in),
                        Columns.ints(in),
                        Columns.doubles(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.ints(in),
                        Columns.bytes(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.longs(in),
                        Columns.ints(in),
                        Columns.ints(in),
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
                        Columns.longs(in));
        in.expectEnd();
        return plan;
    }

    @Override
    public String toString() {
        return "Plan[model="
                + model
                + ", reads="
                + readObject.length
                + ", writes="
                + writeDst.length
                + ", batches="
                + batchCount
                + "]";
    }
}
