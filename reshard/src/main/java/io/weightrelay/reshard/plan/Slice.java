package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.placement.Mode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
public final class Slice extends Routing {
    static final String MAGIC = "wr.slice.v1";

    /**
     * The encoding of a slice with {@link Plan#RELAYED} writes: the same columns, under another
     * name, so a loader that predates relays refuses the slice instead of sending none of its
     * relayed bytes and copying none (its receivers would then miss them unseen).
     */
    static final String MAGIC_RELAYS = "wr.slice.v2";

    final String instance;
    final Columns.Peers peers;

    // Writes landing on this instance's workers: direct ones per worker, fan-out ones per node
    // (the destination is then the delegate; every compatibility worker of the node gets the
    // bytes).
    final Columns.Receives receives;

    Slice(
            String instance,
            Columns.Header header,
            Columns.Peers peers,
            String[] buffers,
            String[] objectIds,
            long[] objectBytes,
            Columns.Reads reads,
            Columns.Writes writes,
            Columns.Receives receives) {
        super(
                header,
                new Tables(
                        peers.id(),
                        peers.instance(),
                        peers.segment(),
                        peers.mode(),
                        buffers,
                        objectIds,
                        objectBytes),
                reads,
                writes);
        this.instance = instance;
        this.peers = peers;
        this.receives = receives;
        peers.check();
        Columns.sameRows(objectIds.length, "object", objectBytes);
        checkRouting();
        receives.check(workerCount(), bufferCount(), header.batchCount());
    }

    /** The slice of {@code instance}: its reads, their writes, and what its workers receive. */
    public static Slice of(Plan plan, String instance) {
        return of(plan, Set.of(instance)).get(instance);
    }

    /**
     * The slices of {@code instances}, by instance id, in one pass over the plan: a caller bounds
     * memory by how many it asks for at once, and pays one scan of the plan per group, not per
     * instance.
     */
    public static Map<String, Slice> of(Plan plan, Set<String> instances) {
        return SliceCutter.slices(plan, instances);
    }

    /**
     * The encodings of the slices of {@code instances}, by instance id: byte for byte {@code
     * of(plan, instances).get(i).encode()}, written column by column as varints while the plan is
     * scanned once. No slice is built as columns of ints and longs first, so a group of slices
     * holds a fraction of the memory and the garbage that building and encoding them does.
     */
    public static Map<String, byte[]> encoded(Plan plan, Set<String> instances) {
        return SliceCutter.encodings(plan, instances);
    }

    /** Every instance's slice, by instance id, in one pass over the plan. */
    public static Map<String, Slice> all(Plan plan) {
        Set<String> instances = new TreeSet<>();
        for (int w = 0; w < plan.workerCount(); w++) {
            instances.add(plan.workerInstance(w));
        }
        return of(plan, instances);
    }

    public String instance() {
        return instance;
    }

    public int receiveCount() {
        return receives.rows();
    }

    // ---- peers are the plan's workers, in its order ----

    public String workerNodeName(int worker) {
        return peers.node()[worker];
    }

    /** Destination worker of a received write (for a fan-out write, the node's delegate). */
    public int receiveDst(int receive) {
        return receives.dst()[receive];
    }

    /**
     * The worker whose read carries the received write; for a {@link Plan#RELAYED} one, the
     * delegate that copies it.
     */
    public int receiveFrom(int receive) {
        return receives.from()[receive];
    }

    /**
     * Where a received write lands in {@code worker}'s buffers: worker, buffer, offset, run and
     * loops. A relayed write and the delegate's write it copies land alike, the one in its
     * destination, the other in the delegate.
     */
    public String receiveLanding(int receive, int worker) {
        StringBuilder key =
                new StringBuilder()
                        .append(worker)
                        .append('/')
                        .append(receiveBuffer(receive))
                        .append('/')
                        .append(receiveDstOffset(receive))
                        .append('/')
                        .append(receiveLength(receive));
        for (int l = receiveLoopFirst(receive); l < receiveLoopEnd(receive); l++) {
            key.append('x').append(receiveLoopCount(l)).append(':').append(receiveLoopStride(l));
        }
        return key.toString();
    }

    public int receiveBatch(int receive) {
        return receives.batch()[receive];
    }

    public int receiveBuffer(int receive) {
        return receives.buffer()[receive];
    }

    public int receiveFlags(int receive) {
        return receives.flags()[receive];
    }

    public long receiveDstOffset(int receive) {
        return receives.dstOffset()[receive];
    }

    public long receiveLength(int receive) {
        return receives.length()[receive];
    }

    public int receiveLoopFirst(int receive) {
        return receives.loopFirst()[receive];
    }

    public int receiveLoopEnd(int receive) {
        return receives.loopFirst()[receive + 1];
    }

    public long receiveLoopCount(int loop) {
        return receives.loopCount()[loop];
    }

    public long receiveLoopStride(int loop) {
        return receives.loopStride()[loop];
    }

    public long receiveBytes(int receive) {
        return receives.bytes(receive);
    }

    /** This instance's worker ids, sorted. */
    public List<String> workers() {
        List<String> out = new ArrayList<>();
        for (int p = 0; p < peers.id().length; p++) {
            if (peers.instance()[p].equals(instance)) {
                out.add(peers.id()[p]);
            }
        }
        return out;
    }

    /** Staging bytes a reader of this slice needs for one batch (the watermark admits two). */
    public long stagingBytesPerBatch() {
        long max = 0;
        for (int i = 0; i < reads.rows(); i++) {
            max = Math.max(max, reads.staging()[i] + reads.span()[i]);
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
            return new GenerationId(model, generation).objectKey(fragment);
        }
    }

    /**
     * A one-sided write from the reader's staging: {@code length} bytes repeated by the loops
     * (outermost first). {@code scatter} (the reader writes its own buffer) is the local copy from
     * staging into the final buffer; {@code remote} means another node (tcp/RDMA), otherwise the
     * local transport; {@code withNotify} is a write with notify into a node delegate; {@code
     * fanout} means the delegate copies the bytes on its node (to every other compatibility worker
     * there, or to the destinations of the relayed writes after it). A read's relayed writes are
     * not among its write ops: the delegate's loader makes them.
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
     * delegate {@code worker} that every compatibility worker of {@code node} ends up holding. A
     * {@code relayed} one is copied to {@code worker} by the delegate {@code fromWorker} from the
     * same place in its own buffer; this instance holds it as the receiver, the delegate or both.
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
            boolean fanout,
            boolean relayed) {}

    /**
     * A delegate's duty after a batch's notifies arrived: copy these bytes from its buffer to the
     * same place in these workers'.
     */
    public record FanoutOp(
            String delegate,
            List<String> targets,
            String buffer,
            long dstOffset,
            long length,
            long[] loopCounts,
            long[] dstStrides) {

        /** The bytes one target receives: {@code length} repeated by the loops. */
        public long bytes() {
            long bytes = length;
            for (long c : loopCounts) {
                bytes *= c;
            }
            return bytes;
        }
    }

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
        if (index < 0 || index >= batchCount()) {
            throw new IndexOutOfBoundsException("batch " + index + " of " + batchCount());
        }
        List<ReadOp> readOps = new ArrayList<>();
        for (int i = 0; i < reads.rows(); i++) {
            if (reads.batch()[i] == index) {
                readOps.add(read(i));
            }
        }
        List<ReceiveOp> receiveOps = new ArrayList<>();
        Map<String, Integer> notifies = new LinkedHashMap<>();
        List<FanoutOp> fanouts = new ArrayList<>();
        for (int v = 0; v < receives.rows(); v++) {
            if (receives.batch()[v] != index) {
                continue;
            }
            ReceiveOp op = receive(v);
            receiveOps.add(op);
            if (op.relayed()) {
                if (peers.instance()[receives.from()[v]].equals(instance)) {
                    fanouts.add(
                            new FanoutOp(
                                    op.fromWorker(),
                                    List.of(op.worker()),
                                    op.buffer(),
                                    op.dstOffset(),
                                    op.length(),
                                    op.loopCounts(),
                                    op.dstStrides()));
                }
                continue;
            }
            int delegate = receives.dst()[v];
            if (peers.instance()[delegate].equals(instance)) {
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
        return new Batch(index, readOps, receiveOps, notifies, fanouts);
    }

    /**
     * Compatibility workers on the delegate's node, other than the delegate (none for a
     * parameter-direct delegate: its relayed writes name theirs).
     */
    private List<String> fanoutTargets(int delegate) {
        List<String> targets = new ArrayList<>();
        if (peers.mode()[delegate] != Mode.COMPAT.ordinal()) {
            return targets;
        }
        for (int p = 0; p < peers.id().length; p++) {
            if (p != delegate
                    && peers.mode()[p] == Mode.COMPAT.ordinal()
                    && peers.node()[p].equals(peers.node()[delegate])) {
                targets.add(peers.id()[p]);
            }
        }
        return targets;
    }

    ReadOp read(int i) {
        int first = reads.rangeFirst()[i];
        int end = reads.rangeFirst()[i + 1];
        List<WriteOp> writeOps = new ArrayList<>(reads.writeFirst()[i + 1] - reads.writeFirst()[i]);
        int reader = reads.reader()[i];
        for (int x = reads.writeFirst()[i]; x < reads.writeFirst()[i + 1]; x++) {
            if ((writes.flags()[x] & Plan.RELAYED) != 0) {
                continue;
            }
            int lf = writes.loopFirst()[x];
            int le = writes.loopFirst()[x + 1];
            int dst = writes.dst()[x];
            writeOps.add(
                    new WriteOp(
                            peers.id()[dst],
                            peers.node()[dst],
                            peers.segment()[dst],
                            tables.buffers()[writes.buffer()[x]],
                            reads.staging()[i] + writes.src()[x],
                            writes.dstOffset()[x],
                            writes.length()[x],
                            Arrays.copyOfRange(writes.loops().count(), lf, le),
                            Arrays.copyOfRange(writes.loops().srcStride(), lf, le),
                            Arrays.copyOfRange(writes.loops().dstStride(), lf, le),
                            !peers.node()[dst].equals(peers.node()[reader]),
                            (writes.flags()[x] & Plan.NOTIFY) != 0,
                            (writes.flags()[x] & Plan.FANOUT) != 0,
                            dst == reader));
        }
        return new ReadOp(
                model(),
                peers.id()[reader],
                objectId(reads.object()[i]),
                objectBytes(reads.object()[i]),
                reads.start()[i],
                reads.span()[i],
                reads.staging()[i],
                Arrays.copyOfRange(reads.rangeStart(), first, end),
                Arrays.copyOfRange(reads.rangeLength(), first, end),
                writeOps);
    }

    ReceiveOp receive(int v) {
        int lf = receives.loopFirst()[v];
        int le = receives.loopFirst()[v + 1];
        int dst = receives.dst()[v];
        return new ReceiveOp(
                peers.id()[dst],
                peers.node()[dst],
                peers.id()[receives.from()[v]],
                tables.buffers()[receives.buffer()[v]],
                receives.dstOffset()[v],
                receives.length()[v],
                Arrays.copyOfRange(receives.loopCount(), lf, le),
                Arrays.copyOfRange(receives.loopStride(), lf, le),
                (receives.flags()[v] & Plan.NOTIFY) != 0,
                (receives.flags()[v] & Plan.FANOUT) != 0,
                (receives.flags()[v] & Plan.RELAYED) != 0);
    }

    public byte[] encode() {
        ByteSink out = new ByteSink(256 + writeCount() * 12 + receives.rows() * 10);
        out.string(magic(writes.flags(), receives.flags())).string(instance);
        header.encode(out);
        peers.encode(out);
        Columns.strings(out, tables.buffers());
        Columns.strings(out, tables.objectIds());
        Columns.longs(out, tables.objectBytes());
        reads.encode(out, Columns.Reads.Order.READER_FIRST);
        writes.encode(out);
        receives.encode(out);
        return out.toByteArray();
    }

    /** The encoding's name: {@link #MAGIC_RELAYS} when a write or receive is relayed. */
    static String magic(byte[]... flagColumns) {
        for (byte[] flags : flagColumns) {
            for (byte f : flags) {
                if ((f & Plan.RELAYED) != 0) {
                    return MAGIC_RELAYS;
                }
            }
        }
        return MAGIC;
    }

    public static Slice decode(byte[] bytes) {
        ByteSource in = new ByteSource(bytes);
        String magic = in.string();
        if (!magic.equals(MAGIC) && !magic.equals(MAGIC_RELAYS)) {
            throw new CodecException(
                    "expected " + MAGIC + " or " + MAGIC_RELAYS + " encoding, found " + magic);
        }
        Slice slice =
                new Slice(
                        in.string(),
                        Columns.Header.decode(in),
                        Columns.Peers.decode(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.longs(in),
                        Columns.Reads.decode(in, Columns.Reads.Order.READER_FIRST),
                        Columns.Writes.decode(in),
                        Columns.Receives.decode(in));
        in.expectEnd();
        return slice;
    }

    @Override
    public String toString() {
        return "Slice[instance="
                + instance
                + ", reads="
                + readCount()
                + ", writes="
                + writeCount()
                + ", receives="
                + receives.rows()
                + "]";
    }
}
