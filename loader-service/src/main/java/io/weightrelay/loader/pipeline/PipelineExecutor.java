package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.DataplaneError;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.LocalMemory;
import io.weightrelay.dataplane.NotifyTimeoutException;
import io.weightrelay.dataplane.ReadRange;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.dataplane.TaskStatus;
import io.weightrelay.dataplane.TransferBatch;
import io.weightrelay.dataplane.TransferEngine;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Slice;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;

/**
 * Runs one loader's slice as a pipeline of byte-bounded batches: a read stage fills staging slot
 * {@code k % slots} with batch {@code k} ({@code getIntoRanges}, one call per object), a push stage
 * writes batch {@code k} from staging to its consumers (one-sided writes, with notify when a node
 * delegate must fan out) while the read stage already fills the next slot, and a fan-out stage
 * copies, as node delegate, what other loaders' batches landed in its workers to the other compat
 * workers of its node. The staging watermark is the slot count: at least two, so batch {@code k+1}
 * is read while batch {@code k} is pushed. Every returned byte count is checked.
 *
 * <p>One executor runs one apply; it is not reusable. Its threads stop at the first failure, which
 * {@link #run()} throws as an {@link ApplyFailure} naming the object or worker at fault.
 */
public final class PipelineExecutor {
    private static final org.slf4j.Logger log =
            org.slf4j.LoggerFactory.getLogger(PipelineExecutor.class);
    private static final Duration WAIT_SLICE = Duration.ofMillis(500);
    private static final int DONE = -1;

    private final SliceSchedule slice;
    private final Slice plan;
    private final String model;
    private final long generation;
    private final TransferEngine engine;
    private final StoreClient store;
    private final Segment staging;
    private final int slots;
    private final long packBase;
    private final long packBytes;
    private final Map<String, ? extends LocalMemory> ownSegments;
    private final Map<String, Long> notifyBaselines;
    private final long deadlineNanos;
    private final LongConsumer progress;
    private final BatchHook hook;
    private final boolean checksums;
    private final java.util.concurrent.ConcurrentLinkedQueue<RangeChecksums.Entry> readChecksums =
            new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final AtomicLong checksumNanos = new AtomicLong();

    /** Concurrent store reads of one batch: several objects in flight use several streams. */
    private final java.util.concurrent.ExecutorService readers;

    private final AtomicReference<ApplyFailure> failure = new AtomicReference<>();
    private final AtomicLong bytesRead = new AtomicLong();
    private final AtomicLong bytesPushed = new AtomicLong();
    private final AtomicLong bytesFannedOut = new AtomicLong();
    private final AtomicLong readNanos = new AtomicLong();
    private final AtomicLong pushNanos = new AtomicLong();
    private final AtomicLong fanOutNanos = new AtomicLong();

    /**
     * @param prepared the schedule, this loader's staging (at least {@link #stagingBytes}) and
     *     receive segments (fan-out sources), and each fan-out counter's value before the
     *     all-prepared barrier
     * @param timeout the whole apply must finish within it
     * @param progress receives every verified byte count as it completes
     */
    public PipelineExecutor(
            Prepared prepared,
            TransferEngine engine,
            StoreClient store,
            ApplySettings settings,
            Duration timeout,
            LongConsumer progress) {
        SliceSchedule slice = prepared.slice();
        Segment staging = prepared.staging();
        int slots = settings.slots();
        if (staging.size() < slots * slice.slotBytes()) {
            throw new IllegalArgumentException(
                    "staging of "
                            + staging.size()
                            + " bytes < "
                            + slots
                            + " x "
                            + slice.slotBytes());
        }
        this.readers =
                java.util.concurrent.Executors.newFixedThreadPool(
                        settings.readThreads(),
                        r -> {
                            Thread t = new Thread(r, "apply-read-" + slice.instance());
                            t.setDaemon(true);
                            return t;
                        });
        this.packBase = slots * slice.slotBytes();
        // One pack area per slot: a slot's area is reused only once its batch's writes landed.
        this.packBytes = Math.min(Integer.MAX_VALUE, (staging.size() - packBase) / slots);
        this.slice = slice;
        this.plan = slice.plan();
        this.model = prepared.request().model();
        this.generation = prepared.request().generation();
        this.engine = engine;
        this.store = store;
        this.staging = staging;
        this.slots = slots;
        this.ownSegments = prepared.ownSegments();
        this.notifyBaselines = prepared.notifyBaselines();
        this.deadlineNanos = System.nanoTime() + timeout.toNanos();
        this.progress = Objects.requireNonNullElse(progress, b -> {});
        this.hook = settings.hook();
        this.checksums = settings.checksums();
    }

    /**
     * The staging an executor for this slice uses with {@code slots} slots: the slots, then one
     * pack area of a batch per slot, where strided writes are gathered.
     */
    public static long stagingBytes(SliceSchedule slice, int slots) {
        return slots * (slice.slotBytes() + slice.plan().batchBytes());
    }

    /** Runs the pipeline to the end; throws the first failure. */
    public ApplyCounts run() {
        Semaphore free = new Semaphore(slots);
        BlockingQueue<Integer> filled = new ArrayBlockingQueue<>(slice.batchCount() + 1);
        Thread reader = thread("read", () -> readStage(free, filled));
        Thread pusher = thread("push", () -> pushStage(free, filled));
        Thread fanout = thread("fanout", this::fanOutStage);
        reader.start();
        pusher.start();
        fanout.start();
        join(reader);
        join(pusher);
        join(fanout);
        readers.shutdownNow();
        ApplyFailure f = failure.get();
        if (f != null) {
            throw f;
        }
        log.info(
                "apply of {}: {} batches, busy read={}ms (checksums {}ms) push={}ms fan-out={}ms",
                slice.instance(),
                slice.batchCount(),
                readNanos.get() / 1_000_000,
                checksumNanos.get() / 1_000_000,
                pushNanos.get() / 1_000_000,
                fanOutNanos.get() / 1_000_000);
        return new ApplyCounts(
                bytesRead.get(),
                bytesPushed.get(),
                bytesFannedOut.get(),
                slice.receiveBytes(),
                slice.batchCount(),
                null,
                checksums ? new RangeChecksums(List.copyOf(readChecksums)) : null,
                checksumNanos.get());
    }

    private Thread thread(String stage, Runnable body) {
        Thread t =
                new Thread(
                        () -> {
                            try {
                                body.run();
                            } catch (ApplyFailure e) {
                                failure.compareAndSet(null, e);
                            } catch (RuntimeException e) {
                                failure.compareAndSet(
                                        null,
                                        new ApplyFailure(
                                                slice.instance(),
                                                stage + " stage failed: " + e.getMessage(),
                                                e));
                            }
                        },
                        "apply-" + stage + "-" + slice.instance());
        t.setDaemon(true);
        return t;
    }

    private void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure.compareAndSet(null, new ApplyFailure(slice.instance(), "apply interrupted"));
        }
    }

    private boolean failed() {
        return failure.get() != null;
    }

    private long remainingMillis() {
        long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
        if (left <= 0) {
            throw new ApplyFailure(slice.instance(), "apply did not finish in time");
        }
        return left;
    }

    private long slotBase(int batch) {
        return (batch % slots) * slice.slotBytes();
    }

    private long stagingOffset(int batch, int read) {
        return slotBase(batch)
                + (long) slice.readerSlot(plan.readReader(read)) * plan.batchBytes()
                + plan.readStaging(read);
    }

    // ---- read stage ----

    private void readStage(Semaphore free, BlockingQueue<Integer> filled) {
        try {
            for (int k = 0; k < slice.batchCount() && !failed(); k++) {
                if (slice.reads(k).isEmpty()) {
                    continue;
                }
                while (!free.tryAcquire(WAIT_SLICE.toMillis(), TimeUnit.MILLISECONDS)) {
                    if (failed()) {
                        return;
                    }
                    remainingMillis();
                }
                long t0 = System.nanoTime();
                readBatch(k);
                readNanos.addAndGet(System.nanoTime() - t0);
                filled.put(k);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApplyFailure(slice.instance(), "read stage interrupted");
        } finally {
            filled.offer(DONE);
        }
    }

    private void readBatch(int batch) {
        List<Integer> reads = slice.reads(batch);
        List<java.util.concurrent.Future<?>> pending = new ArrayList<>();
        int i = 0;
        while (i < reads.size()) {
            int object = plan.readObject(reads.get(i));
            List<ReadRange> ranges = new ArrayList<>();
            int j = i;
            for (; j < reads.size() && plan.readObject(reads.get(j)) == object; j++) {
                int read = reads.get(j);
                long base = stagingOffset(batch, read) - plan.readStart(read);
                for (int r = plan.rangeFirst(read); r < plan.rangeEnd(read); r++) {
                    ranges.add(
                            new ReadRange(
                                    plan.rangeStart(r),
                                    plan.rangeLength(r),
                                    staging,
                                    base + plan.rangeStart(r)));
                }
            }
            String objectId = plan.objectId(object);
            String key = ObjectKeys.key(model, generation, objectId);
            pending.add(readers.submit(() -> readObject(objectId, key, ranges)));
            i = j;
        }
        for (java.util.concurrent.Future<?> f : pending) {
            try {
                f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ApplyFailure(slice.instance(), "read stage interrupted");
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof ApplyFailure a) {
                    throw a;
                }
                throw new ApplyFailure(slice.instance(), "read failed: " + e.getCause(), e);
            }
        }
    }

    /**
     * One object's ranges of this batch, in one {@code getIntoRanges}; every count checked. With
     * checksums the data plane takes the CRC32C of every range as it copies or receives it (block
     * by block while in cache, on the threads that move the bytes), so that control-api can prove
     * what was read against the published checksum without anyone reading a byte again.
     */
    private void readObject(String objectId, String key, List<ReadRange> ranges) {
        if (failed()) {
            return;
        }
        long[] got;
        int[] crcs = null;
        try {
            if (checksums) {
                StoreClient.ChecksummedReads r = store.getIntoRangesChecksummed(key, ranges);
                got = r.bytes();
                crcs = r.crc32c();
                checksumNanos.addAndGet(r.checksumNanos());
            } else {
                got = store.getIntoRanges(key, ranges);
            }
        } catch (DataplaneException e) {
            throw new ApplyFailure(key, "reading " + key + " failed: " + e.getMessage(), e);
        }
        long bytes = 0;
        for (int r = 0; r < got.length; r++) {
            if (got[r] < 0) {
                // a per-range error code, not a count: name it
                DataplaneError error = DataplaneError.fromCode(got[r]);
                throw new ApplyFailure(
                        key,
                        "read of "
                                + key
                                + " at "
                                + ranges.get(r).objectOffset()
                                + " failed: "
                                + error
                                + (error == DataplaneError.PEER_GONE
                                                || error == DataplaneError.TIMEOUT
                                        ? " (the owner of its segment is gone or did not answer"
                                                + " within the transfer timeout)"
                                        : ""));
            }
            if (got[r] != ranges.get(r).length()) {
                throw new ApplyFailure(
                        key,
                        "read of "
                                + key
                                + " at "
                                + ranges.get(r).objectOffset()
                                + " returned "
                                + got[r]
                                + " of "
                                + ranges.get(r).length()
                                + " bytes");
            }
            bytes += got[r];
        }
        if (crcs != null) {
            for (int r = 0; r < ranges.size(); r++) {
                ReadRange range = ranges.get(r);
                readChecksums.add(
                        new RangeChecksums.Entry(
                                objectId, range.objectOffset(), range.length(), crcs[r]));
            }
        }
        bytesRead.addAndGet(bytes);
        progress.accept(bytes);
    }

    // ---- push stage ----

    private void pushStage(Semaphore free, BlockingQueue<Integer> filled) {
        // With more than two slots, several batches' writes are in flight at once (batch k+1's
        // writes are submitted before batch k's have all landed); a slot is freed only once its
        // batch's writes completed.
        int window = Math.max(1, slots - 1);
        java.util.ArrayDeque<InFlight> inFlight = new java.util.ArrayDeque<>();
        try {
            while (true) {
                Integer k = filled.poll(WAIT_SLICE.toMillis(), TimeUnit.MILLISECONDS);
                if (k == null) {
                    if (failed()) {
                        return;
                    }
                    remainingMillis();
                    continue;
                }
                if (k == DONE || failed()) {
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
            while (!inFlight.isEmpty() && !failed()) {
                finish(inFlight.poll(), free);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApplyFailure(slice.instance(), "push stage interrupted");
        } finally {
            for (InFlight f : inFlight) {
                f.pending().close();
            }
        }
    }

    /** A batch whose writes are submitted and not yet verified. */
    private record InFlight(int batch, long drained, Pending pending, List<Integer> inlineFanOut) {}

    private void finish(InFlight f, Semaphore free) {
        bytesPushed.addAndGet(f.drained() + complete(f.pending()));
        if (!f.inlineFanOut().isEmpty()) {
            bytesFannedOut.addAndGet(fanOut(f.inlineFanOut()));
        }
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
        for (int read : slice.reads(batch)) {
            long srcBase = stagingOffset(batch, read);
            for (int w = plan.writeFirst(read); w < plan.writeEnd(read); w++) {
                int dst = plan.writeDst(w);
                BufferDirectory.Placed placed =
                        slice.directory()
                                .require(plan.workerId(dst), plan.buffer(plan.writeBuffer(w)));
                packer.write(srcBase, placed, w);
            }
        }
        List<Integer> inlineFanOut = slice.inlineFanOut(batch);
        String name =
                notify
                        ? SliceSchedule.notifyName(model, generation, slice.instance(), batch)
                        : null;
        return packer.finish(batch, name, inlineFanOut);
    }

    /**
     * Turns a batch's writes into transfer requests. A strided write (a row of a column-split
     * matrix, say) lands contiguously in its destination but comes from scattered staging bytes:
     * those pieces are first gathered into the pack area with a local copy, then sent as one write,
     * instead of one small remote write per row. When the pack area fills up, what is packed is
     * sent and the area reused, unless the batch must notify (then one submission must carry every
     * write, and the rest goes piece by piece).
     */
    private final class Packer {
        private final boolean mayDrain;
        private final ByteBuffer slot;
        private final ByteBuffer pack;
        private final long slotBase;
        private final long packAt;
        private final List<TransferRequest> requests = new ArrayList<>();
        private final List<long[]> pieces = new ArrayList<>();
        private long packed;
        private long moved;
        private long groupDst = -1;
        private long groupLength;
        private BufferDirectory.Placed groupTarget;

        Packer(int batch, boolean mayDrain) {
            this.mayDrain = mayDrain;
            this.slotBase = slotBase(batch);
            this.slot = staging.byteBuffer(slotBase, (int) slice.slotBytes());
            this.packAt = packBase + (batch % slots) * packBytes;
            this.pack = packBytes > 0 ? staging.byteBuffer(packAt, (int) packBytes) : null;
        }

        void write(long srcBase, BufferDirectory.Placed target, int w) {
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
                if (packed + groupLength > packBytes && mayDrain) {
                    moved += transfer(List.copyOf(requests), null);
                    requests.clear();
                    packed = 0;
                }
                if (packed + groupLength <= packBytes) {
                    int at = (int) packed;
                    for (long[] piece : pieces) {
                        pack.put(at, slot, (int) (piece[0] - slotBase), (int) piece[1]);
                        at += (int) piece[1];
                    }
                    requests.add(
                            TransferRequest.write(
                                    staging, packAt + packed, segment, dst, groupLength));
                    packed += groupLength;
                    pieces.clear();
                    return;
                }
            }
            long offset = dst;
            for (long[] piece : pieces) {
                requests.add(TransferRequest.write(staging, piece[0], segment, offset, piece[1]));
                offset += piece[1];
            }
            pieces.clear();
        }

        InFlight finish(int batch, String notifyName, List<Integer> inlineFanOut) {
            flush();
            return new InFlight(batch, moved, submit(requests, notifyName), inlineFanOut);
        }
    }

    // ---- fan-out stage ----

    private void fanOutStage() {
        for (SliceSchedule.FanOutGroup group : slice.fanOutGroups()) {
            String name =
                    SliceSchedule.notifyName(
                            model, generation, group.writerInstance(), group.batch());
            long target = notifyBaselines.getOrDefault(name, 0L) + group.expectedNotifies();
            while (true) {
                if (failed()) {
                    return;
                }
                long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
                if (left <= 0) {
                    throw new ApplyFailure(
                            group.writerInstance(),
                            "batch "
                                    + group.batch()
                                    + " of "
                                    + group.writerInstance()
                                    + " never arrived (notify "
                                    + name
                                    + ")");
                }
                try {
                    engine.awaitNotify(
                            name, target, Duration.ofMillis(Math.min(WAIT_SLICE.toMillis(), left)));
                    break;
                } catch (NotifyTimeoutException e) {
                    // not yet: check the deadline and whether another stage failed
                }
            }
            long t0 = System.nanoTime();
            bytesFannedOut.addAndGet(fanOut(group.writes()));
            fanOutNanos.addAndGet(System.nanoTime() - t0);
        }
    }

    /**
     * Copies what the listed received writes put into this loader's delegate to its node's compat
     * peers.
     */
    private long fanOut(List<Integer> receives) {
        List<TransferRequest> requests = new ArrayList<>();
        for (int v : receives) {
            int dst = plan.receiveDst(v);
            String buffer = plan.buffer(plan.receiveBuffer(v));
            BufferDirectory.Placed from = slice.directory().require(plan.workerId(dst), buffer);
            LocalMemory source = ownSegments.get(from.segment());
            if (source == null) {
                throw new ApplyFailure(
                        plan.workerId(dst),
                        "delegate segment " + from.segment() + " not registered");
            }
            for (int peer : slice.compatWorkersBeside(dst)) {
                if (peer == dst) {
                    continue;
                }
                BufferDirectory.Placed to = slice.directory().require(plan.workerId(peer), buffer);
                Runs.forEachReceived(
                        plan,
                        v,
                        (src, dstOffset, length) ->
                                requests.add(
                                        TransferRequest.write(
                                                source,
                                                from.base() + dstOffset,
                                                to.segment(),
                                                to.base() + dstOffset,
                                                length)));
            }
        }
        return transfer(requests, null);
    }

    /** Submitted transfers; {@link #complete} waits for and verifies them. */
    private record Pending(List<TransferRequest> requests, TransferBatch batch) {
        void close() {
            if (batch != null) {
                batch.close();
            }
        }
    }

    /** Submits, waits, and verifies every task moved all its bytes; returns the bytes moved. */
    private long transfer(List<TransferRequest> requests, String notifyName) {
        return complete(submit(requests, notifyName));
    }

    private Pending submit(List<TransferRequest> requests, String notifyName) {
        List<TransferRequest> copy = List.copyOf(requests);
        if (copy.isEmpty()) {
            return new Pending(copy, null);
        }
        try {
            return new Pending(
                    copy,
                    notifyName == null
                            ? engine.submit(copy)
                            : engine.submitWithNotify(copy, notifyName));
        } catch (DataplaneException e) {
            throw new ApplyFailure(
                    peerOf(copy.get(0).segment()), "transfer failed: " + e.getMessage(), e);
        }
    }

    private long complete(Pending pending) {
        List<TransferRequest> requests = pending.requests();
        if (pending.batch() == null) {
            return 0;
        }
        try (TransferBatch batch = pending.batch()) {
            while (!batch.await(
                    Duration.ofMillis(Math.min(WAIT_SLICE.toMillis(), remainingMillis())))) {
                if (failed()) {
                    throw new ApplyFailure(slice.instance(), "aborted while transferring");
                }
            }
            long bytes = 0;
            List<TaskStatus> statuses = batch.statuses();
            for (TaskStatus s : statuses) {
                TransferRequest r = requests.get(s.index());
                if (s.state() != TaskStatus.State.COMPLETED || s.bytesTransferred() != r.length()) {
                    String peer = peerOf(r.segment());
                    String why =
                            s.state() == TaskStatus.State.FAILED
                                    ? batch.failure(s).getMessage()
                                    : s.bytesTransferred() + " of " + r.length() + " bytes";
                    throw new ApplyFailure(
                            peer, "write to " + peer + " (" + r.segment() + ") failed: " + why);
                }
                bytes += s.bytesTransferred();
            }
            try {
                batch.awaitSuccess(Duration.ZERO);
            } catch (DataplaneException e) {
                throw new ApplyFailure(
                        peerOf(requests.get(0).segment()),
                        "notify not delivered: " + e.getMessage(),
                        e);
            }
            progress.accept(bytes);
            return bytes;
        } catch (DataplaneException e) {
            throw new ApplyFailure(
                    peerOf(requests.get(0).segment()), "transfer failed: " + e.getMessage(), e);
        }
    }

    private String peerOf(String segment) {
        String worker = slice.directory().workerOfSegment(segment);
        return worker != null ? worker : segment;
    }
}
