package io.weightrelay.dataplane;

import java.time.Duration;
import java.util.List;

/**
 * A batch of the Mooncake engine: its tasks ran (each one {@code batch_transfer_sync_write} in the
 * agent) before {@link MooncakeTransferEngine#submit} returned, so it is finished from the start:
 * {@link #await} returns true at once and {@link #cancel} has nothing left to stop. Submitted
 * checksummed, it holds the CRC32C of each completed task, taken when the task ended. Submitted
 * with notify, it holds why the notify was not delivered, if it was not (its tasks completed).
 * Immutable, so thread safe.
 */
final class MooncakeTransferBatch implements TransferBatch {
    private final List<TaskStatus> statuses;
    private final List<DataplaneException> failures;
    private final int[] crcs;
    private final long checksumNanos;
    private final DataplaneException notifyFailure;

    /**
     * {@code failures.get(i)} is task i's exception, null when it completed; {@code crcs} the
     * CRC32C per completed task, null when the batch was not submitted checksummed; {@code
     * notifyFailure} why the batch's notify was not delivered, null when it was or none was asked.
     */
    MooncakeTransferBatch(
            List<TaskStatus> statuses,
            List<DataplaneException> failures,
            int[] crcs,
            long checksumNanos,
            DataplaneException notifyFailure) {
        this.statuses = List.copyOf(statuses);
        this.failures = failures;
        this.crcs = crcs == null ? null : crcs.clone();
        this.checksumNanos = checksumNanos;
        this.notifyFailure = notifyFailure;
    }

    /** Whether every task completed (moved all its bytes). */
    boolean allCompleted() {
        for (DataplaneException f : failures) {
            if (f != null) {
                return false;
            }
        }
        return true;
    }

    /** This batch, its notify not delivered for {@code why} (null: delivered). */
    MooncakeTransferBatch withNotifyFailure(DataplaneException why) {
        return why == null
                ? this
                : new MooncakeTransferBatch(statuses, failures, crcs, checksumNanos, why);
    }

    @Override
    public int size() {
        return statuses.size();
    }

    @Override
    public boolean await(Duration timeout) {
        return true;
    }

    @Override
    public void awaitSuccess(Duration timeout) {
        for (DataplaneException f : failures) {
            if (f != null) {
                throw f;
            }
        }
        if (notifyFailure != null) {
            throw notifyFailure;
        }
    }

    @Override
    public TaskStatus status(int index) {
        return statuses.get(index);
    }

    @Override
    public int crc32c(int index) {
        if (crcs == null) {
            throw new IllegalStateException("the batch was not submitted checksummed");
        }
        if (statuses.get(index).state() != TaskStatus.State.COMPLETED) {
            throw new IllegalStateException(
                    "task "
                            + index
                            + " has no checksum: it failed ("
                            + statuses.get(index).error()
                            + ")");
        }
        return crcs[index];
    }

    @Override
    public long checksumNanos() {
        return checksumNanos;
    }

    @Override
    public List<TaskStatus> statuses() {
        return statuses;
    }

    @Override
    public DataplaneException failure(TaskStatus status) {
        DataplaneException f = failures.get(status.index());
        if (f == null) {
            throw new IllegalArgumentException("task " + status.index() + " did not fail");
        }
        return f;
    }

    @Override
    public boolean cancel(Duration drain) {
        return true;
    }

    @Override
    public void close() {}
}
