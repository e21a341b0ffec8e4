package io.weightrelay.dataplane;

import java.time.Duration;
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
public sealed interface TransferBatch extends AutoCloseable
        permits BuiltinTransferBatch, MooncakeTransferBatch {
    /** Number of tasks. */
    int size();

    /**
     * Waits until every task has finished (completed or failed), at most {@code timeout} (a
     * negative duration waits without limit; tasks always finish, at the latest when a peer's
     * socket times out after the configured {@code ioTimeout}).
     *
     * @return true when all tasks finished, false on timeout
     */
    boolean await(Duration timeout);

    /**
     * Waits for the batch and throws unless every task moved all its bytes (and the notify, if any,
     * was delivered): the specific exception of the first failed task, or {@link
     * TransferTimeoutException}.
     */
    void awaitSuccess(Duration timeout);

    /** The state of task {@code index}. */
    TaskStatus status(int index);

    /**
     * The CRC32C of task {@code index}'s bytes, as the engine took them while moving them.
     *
     * @throws IllegalStateException if the batch was not submitted with {@link
     *     TransferEngine#submitChecksummed}, or the task has not completed (pending or failed)
     */
    int crc32c(int index);

    /**
     * Nanoseconds the engine's threads spent taking this batch's CRC32Cs so far, summed over
     * threads (0 unless submitted checksummed): what the checksums cost apart from moving the
     * bytes.
     */
    long checksumNanos();

    /** The state of every task, in submission order. */
    List<TaskStatus> statuses();

    /**
     * The exception describing a failed task (for callers that inspect statuses), with the engine's
     * message while the batch is open.
     */
    DataplaneException failure(TaskStatus status);

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
    boolean cancel(Duration drain);

    void close();
}
