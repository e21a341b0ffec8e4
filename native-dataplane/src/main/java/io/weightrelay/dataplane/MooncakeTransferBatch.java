package io.weightrelay.dataplane;

import java.time.Duration;
import java.util.List;

/**
 * A batch of the Mooncake engine: its tasks ran (each one {@code batch_transfer_sync_write} in the
 * agent) before {@link MooncakeTransferEngine#submit} returned, so it is finished from the start:
 * {@link #await} returns true at once and {@link #cancel} has nothing left to stop. Submitted
 * checksummed, it holds the CRC32C of each completed task, taken when the task ended. Immutable, so
 * thread safe.
 */
final class MooncakeTransferBatch implements TransferBatch {
    private final List<TaskStatus> statuses;
    private final List<DataplaneException> failures;
    private final int[] crcs;
    private final long checksumNanos;

    /**
     * {@code failures.get(i)} is task i's exception, null when it completed; {@code crcs} the
     * CRC32C per completed task, null when the batch was not submitted checksummed.
     */
    MooncakeTransferBatch(
            List<TaskStatus> statuses,
            List<DataplaneException> failures,
            int[] crcs,
            long checksumNanos) {
        this.statuses = List.copyOf(statuses);
        this.failures = failures;
        this.crcs = crcs == null ? null : crcs.clone();
        this.checksumNanos = checksumNanos;
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
