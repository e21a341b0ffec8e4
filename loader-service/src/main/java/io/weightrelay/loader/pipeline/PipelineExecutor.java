package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.dataplane.TransferEngine;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.function.LongConsumer;

/**
 * Runs one loader's slice as a pipeline of byte-bounded batches: a read stage fills staging slot
 * {@code k % slots} with batch {@code k} ({@code getIntoRanges}, one call per object), a push stage
 * writes batch {@code k} from staging to its consumers (one-sided writes, with notify when a node
 * delegate must fan out) while the read stage already fills the next slot, and a fan-out stage
 * copies, as node delegate, what other loaders' batches landed in its workers to the other compat
 * workers of its node. The staging watermark is the slot count: at least two, so batch {@code k+1}
 * is read while batch {@code k} is pushed. Every returned byte count is checked. Each stage is its
 * own class ({@link ReadStage}, {@link PushStage}, {@link FanOutStage}) on its own thread; they
 * share one {@link ApplyContext}.
 *
 * <p>One executor runs one apply; it is not reusable. Its threads stop at the first failure, which
 * {@link #run()} throws as an {@link ApplyFailure} naming the object or worker at fault.
 */
public final class PipelineExecutor {
    private static final org.slf4j.Logger log =
            org.slf4j.LoggerFactory.getLogger(PipelineExecutor.class);

    private final ApplyContext ctx;
    private final ReadStage reads;
    private final PushStage pushes;
    private final FanOutStage fanOuts;

    /** Free staging slots, and the batches read into theirs, in order: what the stages share. */
    private final Semaphore free;

    private final BlockingQueue<Integer> filled;
    private Thread reader;

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
        this.ctx =
                new ApplyContext(
                        slice,
                        prepared.request().model(),
                        prepared.request().generation(),
                        engine,
                        staging,
                        slots,
                        timeout,
                        progress,
                        settings.checksums());
        this.reads =
                new ReadStage(
                        ctx,
                        store,
                        settings.readThreads(),
                        settings.checksums(),
                        settings.readFault());
        this.fanOuts = new FanOutStage(ctx, prepared.ownSegments(), prepared.notifyBaselines());
        this.pushes = new PushStage(ctx, settings.hook(), fanOuts);
        this.free = new Semaphore(slots);
        this.filled = new ArrayBlockingQueue<>(slice.batchCount() + 1);
    }

    /**
     * The staging an executor for this slice uses with {@code slots} slots: the slots, then one
     * pack area of a batch per slot, where strided writes are gathered. None when the loader reads
     * nothing: it pushes nothing either.
     */
    public static long stagingBytes(SliceSchedule slice, int slots) {
        if (slice.slotBytes() == 0) {
            return 0;
        }
        return slots * (slice.slotBytes() + slice.plan().batchBytes());
    }

    /**
     * Starts the read stage alone, ahead of {@link #run()}: it fills at most {@code slots} batches
     * of this loader's staging from the store and then waits for the push stage. It writes no
     * worker buffer and no peer's segment, so it may run while the update still waits for every
     * loader to be prepared; {@link #abandon()} stops it when the apply will not run.
     */
    public synchronized void readAhead() {
        if (reader == null) {
            reader = thread("read", () -> reads.run(free, filled));
            reader.start();
        }
    }

    /** Stops a read-ahead whose apply will not run, and waits until it stopped. */
    public void abandon() {
        Thread started;
        synchronized (this) {
            started = reader;
        }
        ctx.fail(new ApplyFailure(ctx.slice.instance(), "apply abandoned before it started"));
        if (started != null) {
            join(started);
        }
        reads.close();
    }

    /**
     * Whether a transfer or store read this apply abandoned (after a failure) may still move bytes:
     * its staging must then not be used again. Meaningful once {@link #run()} or {@link #abandon()}
     * returned.
     */
    public boolean undrained() {
        return ctx.undrained();
    }

    /**
     * Stops a running pipeline from outside (the update session failed elsewhere): every stage sees
     * it within a wait slice and {@link #run()} throws {@code why}, unless a failure of its own
     * came first.
     */
    public void stop(ApplyFailure why) {
        ctx.fail(why);
    }

    /**
     * Runs the pipeline to the end (its reads may have started ahead); throws the first failure.
     */
    public ApplyCounts run() {
        readAhead();
        Thread pusher = thread("push", () -> pushes.run(free, filled));
        Thread fanout = thread("fanout", fanOuts::run);
        pusher.start();
        fanout.start();
        join(reader);
        join(pusher);
        join(fanout);
        reads.close();
        ApplyFailure f = ctx.failure();
        if (f != null) {
            throw f;
        }
        log.info(
                "apply of {}: {} batches, busy read={}ms (checksums {}ms) push={}ms fan-out={}ms",
                ctx.slice.instance(),
                ctx.slice.batchCount(),
                reads.readNanos() / 1_000_000,
                reads.checksumNanos() / 1_000_000,
                pushes.pushNanos() / 1_000_000,
                fanOuts.fanOutNanos() / 1_000_000);
        return new ApplyCounts(
                reads.bytesRead(),
                pushes.bytesPushed(),
                fanOuts.bytesFannedOut(),
                ctx.slice.receiveBytes(),
                ctx.slice.batchCount(),
                null,
                reads.checksums(),
                reads.checksumNanos(),
                ctx.sent == null ? null : ctx.sent.digests(),
                ctx.sent == null ? 0 : ctx.sent.summedBytes(),
                ctx.sent == null ? 0 : ctx.sent.twinnedBytes());
    }

    private Thread thread(String stage, Runnable body) {
        String instance = ctx.slice.instance();
        Thread t =
                new Thread(
                        () -> {
                            try {
                                body.run();
                            } catch (ApplyFailure e) {
                                ctx.fail(e);
                            } catch (RuntimeException e) {
                                ctx.fail(
                                        new ApplyFailure(
                                                instance,
                                                stage + " stage failed: " + e.getMessage(),
                                                e));
                            }
                        },
                        "apply-" + stage + "-" + instance);
        t.setDaemon(true);
        return t;
    }

    private void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ctx.fail(new ApplyFailure(ctx.slice.instance(), "apply interrupted"));
        }
    }
}
