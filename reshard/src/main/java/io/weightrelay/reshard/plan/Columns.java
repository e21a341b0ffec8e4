package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.placement.Mode;
import java.lang.reflect.Array;

/**
 * The column table of plans and slices, in one place: the groups of columns a {@link Plan} and a
 * {@link Slice} are made of, each with its own check and its own encoding, and the codec of one
 * column (a count, then every value as a varint, or a string, or raw double bits). A group's
 * columns have one row per item; an offset column ({@code xFirst}) has one entry more and says
 * where each item's rows start in the columns of the group it points into.
 */
final class Columns {
    private Columns() {}

    /**
     * What a plan was computed from and how it is batched, shared by the plan and its slices: the
     * model, the digests of the planner's three inputs, staging bytes per batch, batch count.
     */
    record Header(
            String model,
            String sourceDigest,
            String targetDigest,
            String topologyDigest,
            long batchBytes,
            int batchCount) {

        void encode(ByteSink out) {
            out.string(model).string(sourceDigest).string(targetDigest).string(topologyDigest);
            out.varLong(batchBytes).varInt(batchCount);
        }

        static Header decode(ByteSource in) {
            return new Header(
                    in.string(), in.string(), in.string(), in.string(), in.varLong(), in.varInt());
        }
    }

    /**
     * The reads, one row per read: stored object, reader worker, batch, staging offset, span start
     * and length, the byte ranges fetched ({@code rangeFirst} into {@code rangeStart} and {@code
     * rangeLength}) and the first of the read's writes.
     */
    record Reads(
            int[] object,
            int[] reader,
            int[] batch,
            long[] staging,
            long[] start,
            long[] span,
            int[] rangeFirst,
            long[] rangeStart,
            long[] rangeLength,
            int[] writeFirst) {

        /**
         * The order of the first two columns on the wire. A plan was first written object first, a
         * slice reader first; both stay, since digests and stored plans depend on them.
         */
        enum Order {
            OBJECT_FIRST,
            READER_FIRST
        }

        int rows() {
            return object.length;
        }

        void check(int objects, int workers, int batches, int writes) {
            int reads = rows();
            sameRows(reads, "read", reader, batch, staging, start, span);
            sameRows(rangeStart.length, "range", rangeLength);
            offsets(rangeFirst, reads, rangeStart.length);
            offsets(writeFirst, reads, writes);
            indexes(object, objects, "read object");
            indexes(reader, workers, "reader");
            indexes(batch, batches, "read batch");
        }

        /** Bytes a read fetches from the store: the sum of its ranges. */
        long bytes(int read) {
            long bytes = 0;
            for (int r = rangeFirst[read]; r < rangeFirst[read + 1]; r++) {
                bytes += rangeLength[r];
            }
            return bytes;
        }

        void encode(ByteSink out, Order order) {
            boolean objectFirst = order == Order.OBJECT_FIRST;
            ints(out, objectFirst ? object : reader);
            ints(out, objectFirst ? reader : object);
            ints(out, batch);
            longs(out, staging);
            longs(out, start);
            longs(out, span);
            ints(out, rangeFirst);
            longs(out, rangeStart);
            longs(out, rangeLength);
            ints(out, writeFirst);
        }

        static Reads decode(ByteSource in, Order order) {
            int[] first = ints(in);
            int[] second = ints(in);
            boolean objectFirst = order == Order.OBJECT_FIRST;
            return new Reads(
                    objectFirst ? first : second,
                    objectFirst ? second : first,
                    ints(in),
                    longs(in),
                    longs(in),
                    longs(in),
                    ints(in),
                    longs(in),
                    longs(in),
                    ints(in));
        }
    }

    /**
     * The writes that follow the reads, one row per write: destination worker, buffer, {@link
     * Plan#FANOUT}/{@link Plan#NOTIFY} flags, source offset in the read's staging, destination
     * offset, run length, and the first of the write's loops.
     */
    record Writes(
            int[] dst,
            int[] buffer,
            byte[] flags,
            long[] src,
            long[] dstOffset,
            long[] length,
            int[] loopFirst,
            Loops loops) {

        int rows() {
            return dst.length;
        }

        void check(int workers, int buffers) {
            sameRows(rows(), "write", buffer, flags, src, dstOffset, length);
            sameRows(loops.count.length, "loop", loops.srcStride, loops.dstStride);
            offsets(loopFirst, rows(), loops.count.length);
            indexes(dst, workers, "write destination");
            indexes(buffer, buffers, "write buffer");
        }

        /** Bytes a write moves: its run length times every loop count. */
        long bytes(int write) {
            return repeat(length[write], loops.count, loopFirst[write], loopFirst[write + 1]);
        }

        void encode(ByteSink out) {
            ints(out, dst);
            ints(out, buffer);
            Columns.bytes(out, flags);
            longs(out, src);
            longs(out, dstOffset);
            longs(out, length);
            ints(out, loopFirst);
            longs(out, loops.count);
            longs(out, loops.srcStride);
            longs(out, loops.dstStride);
        }

        static Writes decode(ByteSource in) {
            return new Writes(
                    ints(in),
                    ints(in),
                    Columns.bytes(in),
                    longs(in),
                    longs(in),
                    longs(in),
                    ints(in),
                    new Loops(longs(in), longs(in), longs(in)));
        }
    }

    /**
     * The outer loops of writes, outermost first, one row per loop: how many times the inner run
     * repeats, and the stride it advances by in the source and in the destination.
     */
    record Loops(long[] count, long[] srcStride, long[] dstStride) {}

    /**
     * The writes that land on one loader's workers, one row per write: the destination (for a
     * fan-out write, the node delegate), the worker whose read carries it (for a {@link
     * Plan#RELAYED} write, the delegate that copies it on the node), batch (the read's), buffer,
     * flags, destination offset, run length, and its loops (count and destination stride: the
     * source side is the sender's). A loader's slice holds the relayed writes its workers receive
     * and those its delegates copy.
     */
    record Receives(
            int[] dst,
            int[] from,
            int[] batch,
            int[] buffer,
            byte[] flags,
            long[] dstOffset,
            long[] length,
            int[] loopFirst,
            long[] loopCount,
            long[] loopStride) {

        int rows() {
            return dst.length;
        }

        void check(int workers, int buffers, int batches) {
            sameRows(rows(), "receive", from, batch, buffer, flags, dstOffset, length);
            sameRows(loopCount.length, "receive loop", loopStride);
            offsets(loopFirst, rows(), loopCount.length);
            indexes(dst, workers, "receive destination");
            indexes(from, workers, "receive source");
            indexes(buffer, buffers, "receive buffer");
            indexes(batch, batches, "receive batch");
        }

        long bytes(int receive) {
            return repeat(length[receive], loopCount, loopFirst[receive], loopFirst[receive + 1]);
        }

        void encode(ByteSink out) {
            ints(out, dst);
            ints(out, from);
            ints(out, batch);
            ints(out, buffer);
            Columns.bytes(out, flags);
            longs(out, dstOffset);
            longs(out, length);
            ints(out, loopFirst);
            longs(out, loopCount);
            longs(out, loopStride);
        }

        static Receives decode(ByteSource in) {
            return new Receives(
                    ints(in),
                    ints(in),
                    ints(in),
                    ints(in),
                    Columns.bytes(in),
                    longs(in),
                    longs(in),
                    ints(in),
                    longs(in),
                    longs(in));
        }
    }

    /** A plan's workers, sorted by id: instance, segment, node index, NICs on the node, mode. */
    record Workers(
            String[] id,
            String[] instance,
            String[] segment,
            int[] node,
            int[] nicFirst,
            int[] nicCount,
            byte[] mode) {
        void check(int nodes) {
            sameRows(id.length, "worker", instance, segment, node, nicFirst, nicCount, mode);
            indexes(node, nodes, "worker node");
            modes(mode);
        }

        void encode(ByteSink out) {
            strings(out, id);
            strings(out, instance);
            strings(out, segment);
            ints(out, node);
            ints(out, nicFirst);
            ints(out, nicCount);
            bytes(out, mode);
        }

        static Workers decode(ByteSource in) {
            return new Workers(
                    strings(in), strings(in), strings(in), ints(in), ints(in), ints(in), bytes(in));
        }
    }

    /** A plan's stored objects: id, size, tensor index, and the trainer node that publishes it. */
    record Objects(String[] ids, long[] bytes, int[] tensor, int[] trainer) {
        void check(int tensors, int trainers) {
            sameRows(ids.length, "object", bytes, tensor, trainer);
            indexes(tensor, tensors, "object tensor");
            indexes(trainer, trainers, "object trainer");
        }

        void encode(ByteSink out) {
            strings(out, ids);
            longs(out, bytes);
            ints(out, tensor);
            ints(out, trainer);
        }

        static Objects decode(ByteSource in) {
            return new Objects(strings(in), longs(in), ints(in), ints(in));
        }
    }

    /**
     * A slice's peers: every worker of the plan, in its order, with what a loader needs to reach it
     * (id, instance, node name, segment, mode).
     */
    record Peers(String[] id, String[] instance, String[] node, String[] segment, byte[] mode) {
        static Peers of(Plan plan) {
            int workers = plan.workerCount();
            Peers peers =
                    new Peers(
                            new String[workers],
                            new String[workers],
                            new String[workers],
                            new String[workers],
                            new byte[workers]);
            for (int w = 0; w < workers; w++) {
                peers.id[w] = plan.workerId(w);
                peers.instance[w] = plan.workerInstance(w);
                peers.node[w] = plan.nodes().name(plan.workerNode(w));
                peers.segment[w] = plan.workerSegment(w);
                peers.mode[w] = (byte) plan.workerMode(w).ordinal();
            }
            return peers;
        }

        void check() {
            sameRows(id.length, "peer", instance, node, segment, mode);
            modes(mode);
        }

        void encode(ByteSink out) {
            strings(out, id);
            strings(out, instance);
            strings(out, node);
            strings(out, segment);
            bytes(out, mode);
        }

        static Peers decode(ByteSource in) {
            return new Peers(strings(in), strings(in), strings(in), strings(in), bytes(in));
        }
    }

    /** A run of {@code length} bytes repeated by the loops {@code [first, end)}. */
    static long repeat(long length, long[] counts, int first, int end) {
        long bytes = length;
        for (int l = first; l < end; l++) {
            bytes *= counts[l];
        }
        return bytes;
    }

    // ---- checks every decoded group makes: lengths agree, indexes in range, offsets grow ----

    static void sameRows(int rows, String group, Object... columns) {
        for (Object column : columns) {
            if (Array.getLength(column) != rows) {
                throw new CodecException("inconsistent " + group + " columns");
            }
        }
    }

    static void indexes(int[] values, int bound, String what) {
        for (int v : values) {
            if (v < 0 || v >= bound) {
                throw new CodecException(what + " index out of range");
            }
        }
    }

    private static void modes(byte[] modes) {
        for (byte m : modes) {
            if (m < 0 || m >= Mode.values().length) {
                throw new CodecException("bad worker mode");
            }
        }
    }

    /** An offset column of {@code rows + 1} entries, from 0 up to {@code end}, never falling. */
    private static void offsets(int[] first, int rows, int end) {
        if (first.length != rows + 1 || first[rows] != end) {
            throw new CodecException("inconsistent offset column");
        }
        if (first[0] != 0) {
            throw new CodecException("offset column must start at 0");
        }
        for (int i = 1; i < first.length; i++) {
            if (first[i] < first[i - 1]) {
                throw new CodecException("offset column not monotone");
            }
        }
    }

    // ---- one column ----

    static void strings(ByteSink out, String[] values) {
        out.varInt(values.length);
        for (String v : values) {
            out.string(v);
        }
    }

    static String[] strings(ByteSource in) {
        String[] values = new String[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = in.string();
        }
        return values;
    }

    static void ints(ByteSink out, int[] values) {
        out.varInt(values.length);
        for (int v : values) {
            out.varInt(v);
        }
    }

    static int[] ints(ByteSource in) {
        int[] values = new int[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = in.varInt();
        }
        return values;
    }

    static void longs(ByteSink out, long[] values) {
        out.varInt(values.length);
        for (long v : values) {
            out.varLong(v);
        }
    }

    static long[] longs(ByteSource in) {
        long[] values = new long[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = in.varLong();
        }
        return values;
    }

    static void bytes(ByteSink out, byte[] values) {
        out.varInt(values.length);
        for (byte v : values) {
            out.u8(v);
        }
    }

    static byte[] bytes(ByteSource in) {
        byte[] values = new byte[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = (byte) in.u8();
        }
        return values;
    }

    static void doubles(ByteSink out, double[] values) {
        out.varInt(values.length);
        for (double v : values) {
            out.fixedLong(Double.doubleToLongBits(v));
        }
    }

    static double[] doubles(ByteSource in) {
        double[] values = new double[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = Double.longBitsToDouble(in.fixedLong());
        }
        return values;
    }
}
