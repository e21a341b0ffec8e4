package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.LocalMemory;
import io.weightrelay.dataplane.NotifyTimeoutException;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.reshard.plan.Slice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The fan-out stage of an apply: as node delegate, once a writer's batch has landed in its workers
 * (the batch's notify counter reached its target), copies those bytes on its node: to the other
 * compat workers there, and to the destinations of the parameter-direct writes it relays.
 */
final class FanOutStage {
    private final ApplyContext ctx;
    private final SliceSchedule slice;
    private final Slice plan;
    private final Map<String, ? extends LocalMemory> ownSegments;
    private final Map<String, Long> notifyBaselines;
    private final AtomicLong bytesFannedOut = new AtomicLong();
    private final AtomicLong fanOutNanos = new AtomicLong();

    /**
     * @param ownSegments this loader's receive segments by name (fan-out sources)
     * @param notifyBaselines value of each fan-out counter before the all-prepared barrier
     */
    FanOutStage(
            ApplyContext ctx,
            Map<String, ? extends LocalMemory> ownSegments,
            Map<String, Long> notifyBaselines) {
        this.ctx = ctx;
        this.slice = ctx.slice;
        this.plan = ctx.plan;
        this.ownSegments = ownSegments;
        this.notifyBaselines = notifyBaselines;
    }

    /** Waits for each writer batch this loader fans out, in order, and fans it out. */
    void run() {
        for (SliceSchedule.FanOutGroup group : slice.fanOutGroups()) {
            String name =
                    SliceSchedule.notifyName(
                            ctx.model, ctx.generation, group.writerInstance(), group.batch());
            long target = notifyBaselines.getOrDefault(name, 0L) + group.expectedNotifies();
            while (true) {
                if (ctx.failed()) {
                    return;
                }
                long left = ctx.millisLeft();
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
                    ctx.engine.awaitNotify(
                            name,
                            target,
                            Duration.ofMillis(Math.min(ApplyContext.WAIT_SLICE.toMillis(), left)));
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
     * Copies what the listed received writes put into this loader's delegates to their node's
     * compat peers or relayed destinations.
     */
    private long fanOut(List<Integer> receives) {
        List<TransferRequest> requests = new ArrayList<>();
        List<TransferRequest> readBacks = new ArrayList<>();
        List<SentTally.Tag> tags = new ArrayList<>();
        for (int v : receives) {
            List<Integer> targets = slice.copyTargets(v);
            if (targets.isEmpty()) {
                continue;
            }
            int delegate = slice.copySource(v);
            String buffer = plan.buffer(plan.receiveBuffer(v));
            BufferDirectory.Placed from =
                    slice.directory().require(plan.workerId(delegate), buffer);
            LocalMemory source = ownSegments.get(from.segment());
            if (source == null) {
                throw new ApplyFailure(
                        plan.workerId(delegate),
                        "delegate segment " + from.segment() + " not registered");
            }
            if (slice.directory().foreign(from.segment()) != null) {
                // the delegate's buffer is its own Transfer Engine's memory: what it received is
                // read into the loader's read-back segment first, and copied on from there
                Runs.forEachReceived(
                        plan,
                        v,
                        (src, dstOffset, length) ->
                                readBacks.add(
                                        TransferRequest.read(
                                                source,
                                                from.base() + dstOffset,
                                                from.segment(),
                                                from.base() + dstOffset,
                                                length)));
            }
            for (int peer : targets) {
                BufferDirectory.Placed to = slice.directory().require(plan.workerId(peer), buffer);
                int write =
                        ctx.sent == null
                                ? -1
                                : ctx.sent.open(
                                        slice.instance(),
                                        plan.workerInstance(peer),
                                        plan.workerId(peer),
                                        buffer,
                                        plan.receiveDstOffset(v),
                                        plan.receiveBytes(v));
                Runs.forEachReceived(
                        plan,
                        v,
                        (src, dstOffset, length) -> {
                            requests.add(
                                    TransferRequest.write(
                                            source,
                                            from.base() + dstOffset,
                                            to.segment(),
                                            to.base() + dstOffset,
                                            length));
                            if (ctx.sent != null) {
                                tags.add(ctx.sent.tag(write));
                            }
                        });
            }
        }
        if (!readBacks.isEmpty()) {
            try {
                ctx.engine.transfer(readBacks, Duration.ofMillis(Math.max(1, ctx.millisLeft())));
            } catch (DataplaneException e) {
                throw new ApplyFailure(
                        slice.instance(),
                        "cannot read what a delegate's Transfer Engine buffer received, to copy it"
                                + " on: "
                                + e.getMessage(),
                        e);
            }
        }
        return ctx.transfer(requests, tags, null);
    }

    /**
     * Counts the copies the push stage made to this node's peers where this loader's own reader is
     * the delegate (they leave from staging beside the batch's pushes).
     */
    void countInline(long bytes) {
        bytesFannedOut.addAndGet(bytes);
    }

    long bytesFannedOut() {
        return bytesFannedOut.get();
    }

    long fanOutNanos() {
        return fanOutNanos.get();
    }
}
