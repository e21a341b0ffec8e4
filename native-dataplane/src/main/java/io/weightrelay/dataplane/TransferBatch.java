package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.DpNative;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A submitted batch of one-sided transfers, running asynchronously in the engine. Waiting blocks on
 * a condition variable in the engine (no spinning).
 *
 * <p>Ownership: returned by {@link TransferEngine#submit}; the caller closes it. Closing a batch
 * that is still running releases the handle only: its tasks still finish (or fail) in the engine,
 * and local memory they use must stay registered until then; a caller that gives up on a batch
 * {@link #cancel cancels} it first, so that no byte of it lands later. Thread safe; {@link
 * #close()} waits for a concurrent {@code await} to return.
 */
public final class TransferBatch implements AutoCloseable {
    private final TransferEngine engine;
    private final List<TransferRequest> requests;
    private final long[] segmentSizes;
    private final String notifyName;
    private final boolean checksummed;
    private DpNative.dp_batch batch;

    TransferBatch(
            TransferEngine engine,
            List<TransferRequest> requests,
            long[] segmentSizes,
            String notifyName,
            boolean checksummed,
            DpNative.dp_batch batch) {
        this.engine = engine;
        this.requests = requests;
        this.segmentSizes = segmentSizes;
        this.notifyName = notifyName;
        this.checksummed = checksummed;
        this.batch = batch;
    }

    /** Number of tasks. */
    public int size() {
        return requests.size();
    }

    /**
     * Waits until every task has finished (completed or failed), at most {@code timeout} (a
     * negative duration waits without limit; tasks always finish, at the latest when a peer's
     * socket times out after the configured {@code ioTimeout}).
     *
     * @return true when all tasks finished, false on timeout
     */
    public synchronized boolean await(Duration timeout) {
        DpNative.dp_batch b = open();
        return DpNative.dp_batch_wait(b, timeout.toMillis(), null) == 0;
    }

    /**
     * Waits for the batch and throws unless every task moved all its bytes (and the notify, if any,
     * was delivered): the specific exception of the first failed task, or {@link
     * TransferTimeoutException}.
     */
    public synchronized void awaitSuccess(Duration timeout) {
        if (!await(timeout)) {
            throw new TransferTimeoutException(
                    "batch of " + size() + " transfers not finished after " + timeout);
        }
        for (TaskStatus s : statuses()) {
            if (s.state() == TaskStatus.State.FAILED) {
                throw failure(s);
            }
        }
        DpNative.dp_batch b = open();
        NativeStatus notify = NativeStatus.of(st -> DpNative.dp_batch_notify_status(b, st));
        if (notify.failed()) {
            throw new DataplaneException(
                    notify.error(),
                    "notify '" + notifyName + "' not delivered: " + notify.message());
        }
    }

    /** The state of task {@code index}. */
    public synchronized TaskStatus status(int index) {
        if (index < 0 || index >= size()) {
            throw new IndexOutOfBoundsException(index);
        }
        long[] bytes = new long[1];
        int rc = DpNative.dp_batch_task_status(open(), index, bytes, null);
        TaskStatus.State state =
                rc == 0
                        ? TaskStatus.State.COMPLETED
                        : rc > 0 ? TaskStatus.State.PENDING : TaskStatus.State.FAILED;
        DataplaneError error = rc < 0 ? DataplaneError.fromCode(rc) : null;
        if (error == DataplaneError.UNREGISTERED_BUFFER && outsideLocal(requests.get(index))) {
            error = DataplaneError.OUT_OF_BOUNDS; // never sent: the range left its memory
        }
        if (rc < 0) {
            engine.onTaskFailure(requests.get(index).segment(), error);
        }
        return new TaskStatus(index, state, bytes[0], error);
    }

    /**
     * The CRC32C of task {@code index}'s bytes, as the engine took them while moving them.
     *
     * @throws IllegalStateException if the batch was not submitted with {@link
     *     TransferEngine#submitChecksummed}, or the task has not completed (pending or failed)
     */
    public synchronized int crc32c(int index) {
        if (index < 0 || index >= size()) {
            throw new IndexOutOfBoundsException(index);
        }
        if (!checksummed) {
            throw new IllegalStateException("the batch was not submitted checksummed");
        }
        int[] crc = new int[1];
        int rc = DpNative.dp_batch_task_crc32c(open(), index, crc, null);
        if (rc != 0) {
            throw new IllegalStateException(
                    "task "
                            + index
                            + " has no checksum: it "
                            + (rc > 0
                                    ? "is pending"
                                    : "failed (" + DataplaneError.fromCode(rc) + ")"));
        }
        return crc[0];
    }

    /**
     * Nanoseconds the engine's threads spent taking this batch's CRC32Cs so far, summed over
     * threads (0 unless submitted checksummed): what the checksums cost apart from moving the
     * bytes.
     */
    public synchronized long checksumNanos() {
        long[] nanos = new long[1];
        DpNative.dp_batch b = open();
        NativeStatus.of(st -> DpNative.dp_batch_crc_nanos(b, nanos, st)).check("transfer batch");
        return nanos[0];
    }

    /** The state of every task, in submission order. */
    public synchronized List<TaskStatus> statuses() {
        List<TaskStatus> all = new ArrayList<>(size());
        for (int i = 0; i < size(); i++) {
            all.add(status(i));
        }
        return all;
    }

    /**
     * The exception describing a failed task (for callers that inspect statuses), with the engine's
     * message while the batch is open.
     */
    public synchronized DataplaneException failure(TaskStatus status) {
        NativeStatus reported = new NativeStatus(status.error().code(), "");
        if (batch != null) {
            DpNative.dp_batch b = batch;
            long[] bytes = new long[1];
            NativeStatus now =
                    NativeStatus.of(
                            st -> DpNative.dp_batch_task_status(b, status.index(), bytes, st));
            if (now.failed()) {
                reported = new NativeStatus(status.error().code(), now.message());
            }
        }
        return Errors.forTask(
                reported,
                requests.get(status.index()),
                segmentSizes[status.index()],
                status.bytesTransferred());
    }

    /**
     * Cancels a batch nobody will wait for (its update was abandoned) and waits, at most {@code
     * drain}, until none of its bytes moves any more: transfers not started yet never start (they
     * fail with {@link DataplaneError#CANCELLED}), those already moving finish (a tcp chunk within
     * the peer's {@code ioTimeout}). Only once this returned true may its local memory (staging)
     * and its targets (receive buffers) be reused; when it returns false a transfer still moves,
     * and the memory must be given up instead (its segment closed, so late bytes land in private
     * pages). Idempotent; a batch already finished returns true at once.
     *
     * @return true when no transfer of the batch moves any more
     */
    public synchronized boolean cancel(Duration drain) {
        DpNative.dp_batch b = open();
        return DpNative.dp_batch_cancel(b, drain.toMillis(), null) == 0;
    }

    private static boolean outsideLocal(TransferRequest r) {
        return r.localOffset() < 0
                || r.length() < 0
                || r.localOffset() > r.local().size() - r.length();
    }

    private DpNative.dp_batch open() {
        if (batch == null) {
            throw new DataplaneClosedException("transfer batch");
        }
        return batch;
    }

    @Override
    public synchronized void close() {
        if (batch != null) {
            DpNative.dp_batch_free(batch);
            batch = null;
        }
    }
}
