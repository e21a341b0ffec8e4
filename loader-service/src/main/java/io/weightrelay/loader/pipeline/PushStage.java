package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Slice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The push stage of an apply: writes batch {@code k} from staging to its consumers (one-sided
 * writes, with notify when a node delegate must fan out) while the read stage fills the next slot;
 * with more than two slots several batches' writes are in flight at once. Strided writes are
 * gathered into a pack area first (see {@link Packer}).
 *
 * <p>Where this loader's reader is itself its node's delegate, the copies to the node's other
 * compat workers leave from staging in the same batch, not from the delegate's buffer once the
 * batch landed: the same bytes, but they run beside the batch's tcp writes instead of after them. A
 * batch's notifying writes (to other nodes' delegates) are one submission of their own, so the
 * notify leaves as soon as they landed, not after this node's copies.
 */
final class PushStage {
    private final ApplyContext ctx;
    private final SliceSchedule slice;
    private final Slice plan;
    private final BatchHook hook;
    private final FanOutStage fanOut;
    private final long packBase;
    private final long packBytes;
    private final AtomicLong bytesPushed = new AtomicLong();
    private final AtomicLong pushNanos = new AtomicLong();

    /**
     * @param hook called before each batch is pushed
     * @param fanOut does the fan-outs a batch's own writes owe as soon as they landed
     */
    PushStage(ApplyContext ctx, BatchHook hook, FanOutStage fanOut) {
        this.ctx = ctx;
        this.slice = ctx.slice;
        this.plan = ctx.plan;
        this.hook = hook;
        this.fanOut = fanOut;
        this.packBase = ctx.slots * slice.slotBytes();
        // One pack area per slot: a slot's area is reused only once its batch's writes landed.
        this.packBytes = Math.min(Integer.MAX_VALUE, (ctx.staging.size() - packBase) / ctx.slots);
    }

    /** Pushes each filled batch, freeing its slot once its writes landed. */
    void run(Semaphore free, BlockingQueue<Integer> filled) {
        // With more than two slots, several batches' writes are in flight at once (batch k+1's
        // writes are submitted before batch k's have all landed); a slot is freed only once its
        // batch's writes completed.
        int window = Math.max(1, ctx.slots - 1);
        java.util.ArrayDeque<InFlight> inFlight = new java.util.ArrayDeque<>();
        try {
            while (true) {
                Integer k = filled.poll(ApplyContext.WAIT_SLICE.toMillis(), TimeUnit.MILLISECONDS);
                if (k == null) {
                    if (ctx.failed()) {
                        return;
                    }
                    ctx.remainingMillis();
                    continue;
                }
                if (k == ReadStage.DONE || ctx.failed()) {
                    break;
                }
                hook.beforePush(k);
                long t0 = System.nanoTime();
                inFlight.add(pushBatch(k));
                while (inFlight.size() >= window) {
                    finish(inFlight.poll(), free);
                }
                pushNanos.addAndGet(System.nanoTime() - t0);
            }
            while (!inFlight.isEmpty() && !ctx.failed()) {
                finish(inFlight.poll(), free);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApplyFailure(slice.instance(), "push stage interrupted");
        } finally {
            for (InFlight f : inFlight) {
                f.close();
            }
        }
    }

    /**
     * A batch whose writes are submitted and not yet verified: those that notify, and the others
     * (of which {@code fannedOut} bytes are copies to the reader's node peers).
     */
    private record InFlight(
            int batch,
            long drained,
            ApplyContext.Pending notifying,
            ApplyContext.Pending plain,
            ApplyContext.Pending twins,
            long fannedOut) {
        void close() {
            notifying.close();
            plain.close();
            twins.close();
        }
    }

    private void finish(InFlight f, Semaphore free) {
        // the local copies first: a thread waiting for its batch copies that batch's chunks itself
        // (a batch of tcp writes only would leave it asleep beside a busy copy pool)
        long local;
        try {
            local = ctx.complete(f.plain());
            local += ctx.complete(f.twins());
        } catch (RuntimeException e) {
            f.twins().close();
            f.notifying().close();
            throw e;
        }
        long moved = f.drained() + local + ctx.complete(f.notifying());
        bytesPushed.addAndGet(moved - f.fannedOut());
        fanOut.countInline(f.fannedOut());
        free.release();
    }

    private InFlight pushBatch(int batch) {
        boolean notify = false;
        for (int read : slice.reads(batch)) {
            for (int w = plan.writeFirst(read); w < plan.writeEnd(read); w++) {
                notify |= (plan.writeFlags(w) & Plan.NOTIFY) != 0;
            }
        }
        Packer packer = new Packer(batch, !notify);
        // the notifying writes first: they are summed whatever comes after them, so the plain
        // writes of the same staging bytes (to this node's instances) can go as their twins
        if (notify) {
            pushWrites(batch, packer, true);
        }
        pushWrites(batch, packer, false);
        String name =
                notify
                        ? SliceSchedule.notifyName(
                                ctx.model, ctx.generation, slice.instance(), batch)
                        : null;
        return packer.finish(batch, name);
    }

    /** Hands the batch's notifying writes, or its others, to {@code packer}. */
    private void pushWrites(int batch, Packer packer, boolean notifyingOnes) {
        for (int read : slice.reads(batch)) {
            long srcBase = ctx.stagingOffset(batch, read);
            for (int w = plan.writeFirst(read); w < plan.writeEnd(read); w++) {
                if ((plan.writeFlags(w) & Plan.RELAYED) != 0) {
                    continue; // its delegate's loader copies it on the destination's node
                }
                boolean notifying = (plan.writeFlags(w) & Plan.NOTIFY) != 0;
                if (notifying != notifyingOnes) {
                    continue;
                }
                int dst = plan.writeDst(w);
                String buffer = plan.buffer(plan.writeBuffer(w));
                String node = plan.workerNodeName(plan.readReader(read));
                packer.write(
                        srcBase,
                        slice.directory().require(plan.workerId(dst), buffer),
                        w,
                        dst,
                        notifying,
                        node.equals(plan.workerNodeName(dst)));
                if ((plan.writeFlags(w) & Plan.FANOUT) != 0
                        && dst == plan.readReader(read)
                        && plan.workerMode(dst) == Mode.COMPAT) {
                    // this reader is its node's delegate: its peers' copies leave from staging
                    for (int peer : slice.compatWorkersBeside(dst)) {
                        if (peer != dst) {
                            packer.write(
                                    srcBase,
                                    slice.directory().require(plan.workerId(peer), buffer),
                                    w,
                                    peer,
                                    false,
                                    true);
                            packer.fannedOut += plan.writeBytes(w);
                        }
                    }
                }
            }
        }
    }

    /**
     * Turns a batch's writes into transfer requests. A strided write (a row of a column-split
     * matrix, say) lands contiguously in its destination but comes from scattered staging bytes:
     * those pieces are first gathered into the pack area with a local copy, then sent as one write,
     * instead of one small remote write per row. When the pack area fills up, what is packed is
     * sent and the area reused, unless the batch must notify (then one submission must carry every
     * write, and the rest goes piece by piece). The same pieces are gathered once per pack area:
     * every instance with the same shard layout needs the same gathered bytes (the same columns of
     * the same rows), so their writes all leave from one packed copy.
     */
    private final class Packer {
        private final boolean mayDrain;
        private final ByteBuffer slot;
        private final ByteBuffer pack;
        private final long slotBase;
        private final long packAt;
        private final List<TransferRequest> requests = new ArrayList<>();
        private final List<TransferRequest> notifyingRequests = new ArrayList<>();
        private final List<SentTally.Tag> tags = new ArrayList<>();
        private final List<SentTally.Tag> notifyingTags = new ArrayList<>();

        /**
         * Plain transfers whose source range a summed transfer of this batch already carries, their
         * tags and the tags of those summed transfers ({@link SentTally#twin}): the same staging
         * bytes sent to each instance with the same shard layout are summed once, not once each.
         */
        private final List<TransferRequest> twinRequests = new ArrayList<>();

        private final List<SentTally.Tag> twinTags = new ArrayList<>();
        private final List<SentTally.Tag> twinOf = new ArrayList<>();

        /**
         * The first summed transfer of each staging range (offset, length) since the pack area was
         * last reused.
         */
        private final Map<Source, Summed> summed = new HashMap<>();

        /** The destination write the pending group belongs to, in {@link ApplyContext#sent}. */
        private int sentWrite = -1;

        private final List<long[]> pieces = new ArrayList<>();
        private final Map<Gather, Long> gathered = new HashMap<>();
        private long fannedOut;
        private boolean groupNotifies;
        private boolean groupLocal;
        private long packed;
        private long moved;
        private long groupDst = -1;
        private long groupLength;
        private BufferDirectory.Placed groupTarget;

        Packer(int batch, boolean mayDrain) {
            this.mayDrain = mayDrain;
            this.slotBase = ctx.slotBase(batch);
            this.slot = ctx.staging.byteBuffer(slotBase, (int) slice.slotBytes());
            this.packAt = packBase + (batch % ctx.slots) * packBytes;
            this.pack = packBytes > 0 ? ctx.staging.byteBuffer(packAt, (int) packBytes) : null;
        }

        /**
         * @param local whether {@code to} is on this loader's node (its bytes are a local copy)
         */
        void write(
                long srcBase,
                BufferDirectory.Placed target,
                int w,
                int to,
                boolean notifying,
                boolean local) {
            groupNotifies = notifying;
            groupLocal = local;
            if (ctx.sent != null) {
                sentWrite =
                        ctx.sent.open(
                                slice.instance(),
                                plan.workerInstance(to),
                                plan.workerId(to),
                                target.bufferId(),
                                plan.writeDstOffset(w),
                                plan.writeBytes(w));
            }
            Runs.forEach(
                    plan,
                    w,
                    (src, dst, length) -> {
                        if (groupTarget == target && groupDst + groupLength == dst) {
                            pieces.add(new long[] {srcBase + src, length});
                            groupLength += length;
                        } else {
                            flush();
                            groupTarget = target;
                            groupDst = dst;
                            groupLength = length;
                            pieces.add(new long[] {srcBase + src, length});
                        }
                    });
            flush();
        }

        /**
         * Sends or packs the pending group, then forgets it: the next run starts a new group at its
         * own destination offset (a run contiguous with an already flushed group must not extend
         * it, or its bytes would land at that group's start).
         */
        private void flush() {
            if (pieces.isEmpty()) {
                return;
            }
            flushGroup();
            groupTarget = null;
            groupDst = -1;
            groupLength = 0;
        }

        private void flushGroup() {
            String segment = groupTarget.segment();
            long dst = groupTarget.base() + groupDst;
            if (pieces.size() > 1 && pack != null && groupLength <= packBytes) {
                Gather gather = Gather.of(pieces);
                Long already = gathered.get(gather);
                if (already != null) {
                    add(
                            TransferRequest.write(
                                    ctx.staging, packAt + already, segment, dst, groupLength));
                    pieces.clear();
                    return;
                }
                if (packed + groupLength > packBytes && mayDrain) {
                    moved += ctx.transfer(List.copyOf(requests), List.copyOf(tags), null);
                    moved += ctx.complete(ctx.submitTwins(twinRequests, twinTags, twinOf));
                    requests.clear();
                    tags.clear();
                    twinRequests.clear();
                    twinTags.clear();
                    twinOf.clear();
                    summed.clear();
                    gathered.clear();
                    packed = 0;
                }
                if (packed + groupLength <= packBytes) {
                    int at = (int) packed;
                    for (long[] piece : pieces) {
                        pack.put(at, slot, (int) (piece[0] - slotBase), (int) piece[1]);
                        at += (int) piece[1];
                    }
                    add(
                            TransferRequest.write(
                                    ctx.staging, packAt + packed, segment, dst, groupLength));
                    gathered.put(gather, packed);
                    packed += groupLength;
                    pieces.clear();
                    return;
                }
            }
            long offset = dst;
            for (long[] piece : pieces) {
                add(TransferRequest.write(ctx.staging, piece[0], segment, offset, piece[1]));
                offset += piece[1];
            }
            pieces.clear();
        }

        /**
         * Adds a transfer of the pending group's write to its submission, tagged as the next piece
         * of that write when the apply proves what landed. A plain transfer of a staging range a
         * summed transfer already carries goes unsummed, as that one's twin, unless both are local
         * copies of one submission: the data plane copies those as one job, summing the source once
         * for all of them, and splitting them would read the source twice.
         */
        private void add(TransferRequest request) {
            if (ctx.sent == null) {
                (groupNotifies ? notifyingRequests : requests).add(request);
                return;
            }
            SentTally.Tag tag = ctx.sent.tag(sentWrite);
            Source source = new Source(request.localOffset(), request.length());
            Summed first = groupNotifies ? null : summed.get(source);
            if (first != null && !(first.local() && groupLocal && !first.notifying())) {
                twinRequests.add(request);
                twinTags.add(tag);
                twinOf.add(first.tag());
                return;
            }
            (groupNotifies ? notifyingRequests : requests).add(request);
            (groupNotifies ? notifyingTags : tags).add(tag);
            summed.putIfAbsent(source, new Summed(tag, groupLocal, groupNotifies));
        }

        /** Submits the notifying writes first: their tcp streams start before the local copies. */
        InFlight finish(int batch, String notifyName) {
            flush();
            ApplyContext.Pending notifying =
                    ctx.submit(notifyingRequests, notifyingTags, notifyName);
            ApplyContext.Pending plain;
            ApplyContext.Pending twins;
            try {
                plain = ctx.submit(requests, tags, null);
            } catch (ApplyFailure e) {
                notifying.close();
                throw e;
            }
            try {
                twins = ctx.submitTwins(twinRequests, twinTags, twinOf);
            } catch (ApplyFailure e) {
                plain.close();
                notifying.close();
                throw e;
            }
            return new InFlight(batch, moved, notifying, plain, twins, fannedOut);
        }
    }

    /** A transfer's source: a range of staging. */
    private record Source(long offset, long length) {}

    /** A summed transfer: its tag, whether it is a local copy, whether it notifies. */
    private record Summed(SentTally.Tag tag, boolean local, boolean notifying) {}

    /** The staging pieces (offset, length, in order) a packed write gathers: its content. */
    private record Gather(long[] pieces) {
        static Gather of(List<long[]> pieces) {
            long[] flat = new long[pieces.size() * 2];
            for (int i = 0; i < pieces.size(); i++) {
                flat[2 * i] = pieces.get(i)[0];
                flat[2 * i + 1] = pieces.get(i)[1];
            }
            return new Gather(flat);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Gather g && Arrays.equals(pieces, g.pieces);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(pieces);
        }

        @Override
        public String toString() {
            return "Gather" + Arrays.toString(pieces);
        }
    }

    long bytesPushed() {
        return bytesPushed.get();
    }

    long pushNanos() {
        return pushNanos.get();
    }
}
