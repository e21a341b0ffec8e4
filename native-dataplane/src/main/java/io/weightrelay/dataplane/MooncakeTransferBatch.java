package io.weightrelay.dataplane;

import java.time.Duration;
import java.util.List;

/**
 * A batch of the Mooncake engine: its tasks ran (each one {@code batch_transfer_sync_write} in the
 * agent) before {@link MooncakeTransferEngine#submit} returned, so it is finished from the start:
 * {@link #await} returns true at once and {@link #cancel} has nothing left to stop. No CRC32C
 * ({@link #crc32c} throws as for a batch not submitted checksummed). Immutable, so thread safe.
 */
final class MooncakeTransferBatch implements TransferBatch {
    private final List<TaskStatus> statuses;
    private final List<DataplaneException> failures;

    /** {@code failures.get(i)} is task i's exception, null when it completed. */
    MooncakeTransferBatch(List<TaskStatus> statuses, List<DataplaneException> failures) {
        this.statuses = List.copyOf(statuses);
        this.failures = failures;
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
    }

    @Override
    public TaskStatus status(int index) {
        return statuses.get(index);
    }

    @Override
    public int crc32c(int index) {
        throw new IllegalStateException(
                "task " + index + ": the Mooncake engine takes no CRC32C while moving bytes");
    }

    @Override
    public long checksumNanos() {
        return 0;
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
