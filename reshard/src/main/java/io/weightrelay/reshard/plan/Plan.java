package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.Digests;
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
 * offsets: a compatibility delegate into every other compatibility worker on its node, a
 * parameter-direct delegate into the destinations of the {@link #RELAYED} writes that follow it.
 * {@link #NOTIFY} marks writes that must bump the delegate's notify counter.
 */
public final class Plan extends Routing {
    /** The destination is a node delegate that fans the bytes out on its node. */
    public static final int FANOUT = 1;

    /** The write must notify its target (write with notify); the reader is someone else. */
    public static final int NOTIFY = 2;

    /**
     * The bytes a parameter-direct write would send across the network a second time, to another
     * worker of the node it just reached with the same layout: the reader does not send them, the
     * delegate of the {@link #FANOUT} write right before (same geometry, same node) copies them
     * there. Set only on a parameter-direct write whose destination is on another node than the
     * reader.
     */
    public static final int RELAYED = 4;

    private static final String MAGIC = "wr.plan.v1";

    final Hosts nodes;
    final Hosts trainers;
    final Columns.Workers workers;
    final String[] tensorNames;
    final Columns.Objects objects;

    Plan(
            Columns.Header header,
            Hosts nodes,
            Hosts trainers,
            Columns.Workers workers,
            String[] buffers,
            String[] tensorNames,
            Columns.Objects objects,
            Columns.Reads reads,
            Columns.Writes writes) {
        super(
                header,
                new Tables(
                        workers.id(),
                        workers.instance(),
                        workers.segment(),
                        workers.mode(),
                        buffers,
                        objects.ids(),
                        objects.bytes()),
                reads,
                writes);
        this.nodes = nodes;
        this.trainers = trainers;
        this.workers = workers;
        this.tensorNames = tensorNames;
        this.objects = objects;
        nodes.check("node");
        trainers.check("trainer");
        workers.check(nodes.count());
        objects.check(tensorNames.length, trainers.count());
        checkRouting();
    }

    /** The rollout nodes the workers run on; {@link #workerNode} indexes them. */
    public Hosts nodes() {
        return nodes;
    }

    /** The trainer nodes that publish the objects; {@link #objectTrainer} indexes them. */
    public Hosts trainers() {
        return trainers;
    }

    public int workerNode(int worker) {
        return workers.node()[worker];
    }

    public int workerNicFirst(int worker) {
        return workers.nicFirst()[worker];
    }

    public int workerNicCount(int worker) {
        return workers.nicCount()[worker];
    }

    /**
     * The number of the worker's first NIC among every rollout NIC ({@link Hosts#firstNic}); it
     * stripes over {@link #workerNicCount} NICs from there.
     */
    public int workerNic(int worker) {
        return nodes.firstNic(workerNode(worker)) + workerNicFirst(worker);
    }

    public int tensorCount() {
        return tensorNames.length;
    }

    public String tensorName(int tensor) {
        return tensorNames[tensor];
    }

    public int objectTensor(int object) {
        return objects.tensor()[object];
    }

    public int objectTrainer(int object) {
        return objects.trainer()[object];
    }

    /** Index of a worker id, or -1. */
    public int workerIndex(String id) {
        int index = Arrays.binarySearch(workers.id(), id);
        return index >= 0 ? index : -1;
    }

    /** SHA-256 of the encoding: equal plans have equal digests. */
    public String digest() {
        return Digests.sha256Hex(encode());
    }

    public byte[] encode() {
        ByteSink out = new ByteSink(64 + writeCount() * 12 + readCount() * 24);
        out.string(MAGIC);
        header.encode(out);
        nodes.encode(out);
        trainers.encode(out);
        workers.encode(out);
        Columns.strings(out, tables.buffers());
        Columns.strings(out, tensorNames);
        objects.encode(out);
        reads.encode(out, Columns.Reads.Order.OBJECT_FIRST);
        writes.encode(out);
        return out.toByteArray();
    }

    public static Plan decode(byte[] bytes) {
        ByteSource in = new ByteSource(bytes);
        in.expectMagic(MAGIC);
        Plan plan =
                new Plan(
                        Columns.Header.decode(in),
                        Hosts.decode(in),
                        Hosts.decode(in),
                        Columns.Workers.decode(in),
                        Columns.strings(in),
                        Columns.strings(in),
                        Columns.Objects.decode(in),
                        Columns.Reads.decode(in, Columns.Reads.Order.OBJECT_FIRST),
                        Columns.Writes.decode(in));
        in.expectEnd();
        return plan;
    }

    @Override
    public String toString() {
        return "Plan[model="
                + model()
                + ", reads="
                + readCount()
                + ", writes="
                + writeCount()
                + ", batches="
                + batchCount()
                + "]";
    }
}
