package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.TaskStatus;
import io.weightrelay.dataplane.TransferBatch;
import io.weightrelay.dataplane.TransferEngine;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.reshard.plan.Slice;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;

/**
 * What the stages of one apply share: the schedule and where each batch sits in staging, the
 * deadline and the first failure (which stops every stage), and the one way a stage moves bytes:
 * submit transfers, wait for them, verify every count.
 */
final class ApplyContext {
    /** How long a stage waits at once before it checks the deadline and the other stages. */
    static final Duration WAIT_SLICE = Duration.ofMillis(500);

    /**
     * How long an abandoned batch (the apply failed, was stopped or ran out of time) may take to
     * drain once cancelled: its queued transfers never start, and each one already moving ends
     * within the data plane's io timeout. Staging and buffers are reused only after it drained.
     */
    static final Duration CANCEL_DRAIN = Duration.ofSeconds(30);

    private static final org.slf4j.Logger log =
            org.slf4j.LoggerFactory.getLogger(ApplyContext.class);

    final SliceSchedule slice;
    final Slice plan;
    final String model;
    final long generation;
    final TransferEngine engine;
    final Segment staging;
    final int slots;
    final LongConsumer progress;

    /** What this apply's writes sent, as the data plane summed it; null when not proven. */
    final SentTally sent;

    private final long deadlineNanos;
    private final AtomicReference<ApplyFailure> failure = new AtomicReference<>();

    /** Set when an abandoned transfer did not drain: its staging must not be used again. */
    private final java.util.concurrent.atomic.AtomicBoolean undrained =
            new java.util.concurrent.atomic.AtomicBoolean();

    ApplyContext(
            SliceSchedule slice,
            String model,
            long generation,
            TransferEngine engine,
            Segment staging,
            int slots,
            Duration timeout,
            LongConsumer progress,
            boolean proveLanded) {
        this.slice = slice;
        this.sent = proveLanded ? new SentTally() : null;
        this.plan = slice.plan();
        this.model = model;
        this.generation = generation;
        this.engine = engine;
        this.staging = staging;
        this.slots = slots;
        this.deadlineNanos = System.nanoTime() + timeout.toNanos();
        this.progress = Objects.requireNonNullElse(progress, b -> {});
    }

    /** Records the first failure; later ones are consequences. */
    void fail(ApplyFailure f) {
        failure.compareAndSet(null, f);
    }

    ApplyFailure failure() {
        return failure.get();
    }

    boolean failed() {
        return failure.get() != null;
    }

    /** Milliseconds left before the deadline, or the apply fails. */
    long remainingMillis() {
        long left = millisLeft();
        if (left <= 0) {
            throw new ApplyFailure(slice.instance(), "apply did not finish in time");
        }
        return left;
    }

    long millisLeft() {
        return TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
    }

    /** Staging offset of batch {@code batch}'s slot. */
    long slotBase(int batch) {
        return (batch % slots) * slice.slotBytes();
    }

    /** Staging offset where read {@code read} of batch {@code batch} lands. */
    long stagingOffset(int batch, int read) {
        return slotBase(batch)
                + (long) slice.readerSlot(plan.readReader(read)) * plan.batchBytes()
                + plan.readStaging(read);
    }

    /** Whether some abandoned transfer (or store read) did not drain in time. */
    boolean undrained() {
        return undrained.get();
    }

    /** Records that a transfer of this apply may still move bytes after it ended. */
    void markUndrained(String what) {
        undrained.set(true);
        log.error(
                "apply of {}: {} did not drain within {} of being abandoned: its staging is given"
                        + " up, so late bytes land in no update's memory",
                slice.instance(),
                what,
                CANCEL_DRAIN);
    }

    /**
     * Submitted transfers; {@link #complete} waits for and verifies them. Closing pending transfers
     * abandons them: they are cancelled and drained first, so none of their bytes lands later. With
     * {@code twins}, the transfers moved unsummed, each counting in {@link #sent} with the checksum
     * of the summed transfer of the same source bytes its twin tag names.
     */
    record Pending(
            List<TransferRequest> requests,
            List<SentTally.Tag> tags,
            List<SentTally.Tag> twins,
            TransferBatch batch,
            ApplyContext ctx) {
        void close() {
            if (batch != null) {
                try {
                    if (!batch.cancel(CANCEL_DRAIN)) {
                        ctx.markUndrained("a batch of " + requests.size() + " transfers");
                    }
                } catch (DataplaneException e) {
                    // already closed: nothing of it moves any more
                } finally {
                    batch.close();
                }
            }
        }
    }

    /** Submits, waits, and verifies every task moved all its bytes; returns the bytes moved. */
    long transfer(List<TransferRequest> requests, String notifyName) {
        return complete(submit(requests, null, notifyName));
    }

    /**
     * Like {@link #transfer}; with {@code tags} (one per request: the piece of a destination write
     * it carries) the data plane sums the bytes as it moves them, into {@link #sent}.
     */
    long transfer(List<TransferRequest> requests, List<SentTally.Tag> tags, String notifyName) {
        return complete(submit(requests, tags, notifyName));
    }

    Pending submit(List<TransferRequest> requests, String notifyName) {
        return submit(requests, null, notifyName);
    }

    Pending submit(List<TransferRequest> requests, List<SentTally.Tag> tags, String notifyName) {
        return submit(requests, tags, null, notifyName);
    }

    /**
     * Submits transfers unsummed whose source bytes summed transfers of this apply carry too: each
     * counts in {@link #sent} under its own tag with the checksum of the transfer its twin tag
     * names (one per request, as its tag).
     */
    Pending submitTwins(
            List<TransferRequest> requests, List<SentTally.Tag> tags, List<SentTally.Tag> twins) {
        return submit(requests, tags, twins, null);
    }

    private Pending submit(
            List<TransferRequest> requests,
            List<SentTally.Tag> tags,
            List<SentTally.Tag> twinTags,
            String notifyName) {
        List<TransferRequest> copy = List.copyOf(requests);
        List<SentTally.Tag> tagged = sent == null || tags == null ? null : List.copyOf(tags);
        List<SentTally.Tag> twins =
                tagged == null || twinTags == null ? null : List.copyOf(twinTags);
        if (tagged != null && tagged.size() != copy.size()) {
            throw new IllegalArgumentException(
                    tagged.size() + " tags for " + copy.size() + " transfers");
        }
        if (twins != null && twins.size() != copy.size()) {
            throw new IllegalArgumentException(
                    twins.size() + " twin tags for " + copy.size() + " transfers");
        }
        if (copy.isEmpty()) {
            return new Pending(copy, tagged, twins, null, this);
        }
        try {
            TransferBatch batch;
            if (tagged == null || twins != null) {
                batch =
                        notifyName == null
                                ? engine.submit(copy)
                                : engine.submitWithNotify(copy, notifyName);
            } else {
                batch =
                        notifyName == null
                                ? engine.submitChecksummed(copy)
                                : engine.submitChecksummedWithNotify(copy, notifyName);
            }
            return new Pending(copy, tagged, twins, batch, this);
        } catch (DataplaneException e) {
            throw new ApplyFailure(
                    peerOf(copy.get(0).segment()), "transfer failed: " + e.getMessage(), e);
        }
    }

    long complete(Pending pending) {
        List<TransferRequest> requests = pending.requests();
        if (pending.batch() == null) {
            return 0;
        }
        TransferBatch batch = pending.batch();
        try {
            try {
                while (!batch.await(
                        Duration.ofMillis(Math.min(WAIT_SLICE.toMillis(), remainingMillis())))) {
                    if (failed()) {
                        throw new ApplyFailure(slice.instance(), "aborted while transferring");
                    }
                }
            } catch (RuntimeException abandoned) {
                // stopped or out of time with transfers still queued: cancel and drain them, so
                // none lands in a buffer or staging after this apply ended
                pending.close();
                throw abandoned;
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
                if (pending.twins() != null) {
                    sent.twin(
                            pending.tags().get(s.index()),
                            pending.twins().get(s.index()),
                            r.length());
                } else if (pending.tags() != null) {
                    sent.add(pending.tags().get(s.index()), batch.crc32c(s.index()), r.length());
                }
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
        } finally {
            batch.close();
        }
    }

    String peerOf(String segment) {
        String worker = slice.directory().workerOfSegment(segment);
        return worker != null ? worker : segment;
    }
}
