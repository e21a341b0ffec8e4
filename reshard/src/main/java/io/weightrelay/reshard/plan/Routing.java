package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.placement.Mode;

/**
 * The reads a plan makes and the writes that follow each, as the whole {@link Plan} holds them for
 * every loader and a {@link Slice} for one, with the tables both name alike: the workers (the
 * plan's own, or every worker of the plan as a slice's peers), the buffers and the stored objects
 * that indexes in the reads and writes point into. Immutable: the column arrays never leave the
 * instance.
 */
public abstract sealed class Routing permits Plan, Slice {
    // Mode.values() copies the array on every call, and modes are read per write.
    private static final Mode[] MODES = Mode.values();

    final Columns.Header header;
    final Columns.Reads reads;
    final Columns.Writes writes;
    final Tables tables;

    /**
     * What the holder's reads and writes point into: the worker columns the plan and its slices
     * share (id, instance, segment, mode), buffer ids, and each stored object's id and size.
     */
    record Tables(
            String[] workerIds,
            String[] workerInstances,
            String[] workerSegments,
            byte[] workerModes,
            String[] buffers,
            String[] objectIds,
            long[] objectBytes) {}

    Routing(Columns.Header header, Tables tables, Columns.Reads reads, Columns.Writes writes) {
        this.header = header;
        this.tables = tables;
        this.reads = reads;
        this.writes = writes;
    }

    /**
     * Checks the read and write columns against the holder's tables, once the holder checked its
     * own groups.
     */
    final void checkRouting() {
        int workers = workerCount();
        reads.check(objectCount(), workers, header.batchCount(), writes.rows());
        writes.check(workers, bufferCount());
    }

    public String model() {
        return header.model();
    }

    public String sourceDigest() {
        return header.sourceDigest();
    }

    public String targetDigest() {
        return header.targetDigest();
    }

    public String topologyDigest() {
        return header.topologyDigest();
    }

    public long batchBytes() {
        return header.batchBytes();
    }

    public int batchCount() {
        return header.batchCount();
    }

    public int workerCount() {
        return tables.workerIds().length;
    }

    public String workerId(int worker) {
        return tables.workerIds()[worker];
    }

    public String workerInstance(int worker) {
        return tables.workerInstances()[worker];
    }

    public String workerSegment(int worker) {
        return tables.workerSegments()[worker];
    }

    public Mode workerMode(int worker) {
        return MODES[tables.workerModes()[worker]];
    }

    public int bufferCount() {
        return tables.buffers().length;
    }

    public String buffer(int index) {
        return tables.buffers()[index];
    }

    public int objectCount() {
        return tables.objectIds().length;
    }

    public String objectId(int object) {
        return tables.objectIds()[object];
    }

    public long objectBytes(int object) {
        return tables.objectBytes()[object];
    }

    public int readCount() {
        return reads.rows();
    }

    public int readObject(int read) {
        return reads.object()[read];
    }

    public int readReader(int read) {
        return reads.reader()[read];
    }

    public int readBatch(int read) {
        return reads.batch()[read];
    }

    public long readStaging(int read) {
        return reads.staging()[read];
    }

    public long readStart(int read) {
        return reads.start()[read];
    }

    public long readSpan(int read) {
        return reads.span()[read];
    }

    public int rangeFirst(int read) {
        return reads.rangeFirst()[read];
    }

    public int rangeEnd(int read) {
        return reads.rangeFirst()[read + 1];
    }

    public long rangeStart(int range) {
        return reads.rangeStart()[range];
    }

    public long rangeLength(int range) {
        return reads.rangeLength()[range];
    }

    /** Bytes a read fetches from the store: the sum of its ranges. */
    public long readBytes(int read) {
        return reads.bytes(read);
    }

    public int writeFirst(int read) {
        return reads.writeFirst()[read];
    }

    public int writeEnd(int read) {
        return reads.writeFirst()[read + 1];
    }

    public int writeCount() {
        return writes.rows();
    }

    public int writeDst(int write) {
        return writes.dst()[write];
    }

    public int writeBuffer(int write) {
        return writes.buffer()[write];
    }

    public int writeFlags(int write) {
        return writes.flags()[write];
    }

    /** Source offset relative to the read's span start (its staging offset). */
    public long writeSrc(int write) {
        return writes.src()[write];
    }

    public long writeDstOffset(int write) {
        return writes.dstOffset()[write];
    }

    public long writeLength(int write) {
        return writes.length()[write];
    }

    public int loopFirst(int write) {
        return writes.loopFirst()[write];
    }

    public int loopEnd(int write) {
        return writes.loopFirst()[write + 1];
    }

    public long loopCount(int loop) {
        return writes.loops().count()[loop];
    }

    public long loopSrcStride(int loop) {
        return writes.loops().srcStride()[loop];
    }

    public long loopDstStride(int loop) {
        return writes.loops().dstStride()[loop];
    }

    /** Bytes a write moves: its run length times every loop count. */
    public long writeBytes(int write) {
        return writes.bytes(write);
    }
}
