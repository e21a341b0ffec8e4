package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.DpNative;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** The built-in engine's {@link TransferBatch} (its contract is there). */
final class BuiltinTransferBatch implements TransferBatch {
    private final BuiltinTransferEngine engine;
    private final List<TransferRequest> requests;
    private final long[] segmentSizes;
    private final String notifyName;
    private final boolean checksummed;
    private DpNative.dp_batch batch;

    BuiltinTransferBatch(
            BuiltinTransferEngine engine,
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

    @Override
    public int size() {
        return requests.size();
    }

    @Override
    public synchronized boolean await(Duration timeout) {
        DpNative.dp_batch b = open();
        return DpNative.dp_batch_wait(b, timeout.toMillis(), null) == 0;
    }

    @Override
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

    @Override
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

    @Override
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

    @Override
    public synchronized long checksumNanos() {
        long[] nanos = new long[1];
        DpNative.dp_batch b = open();
        NativeStatus.of(st -> DpNative.dp_batch_crc_nanos(b, nanos, st)).check("transfer batch");
        return nanos[0];
    }

    @Override
    public synchronized List<TaskStatus> statuses() {
        List<TaskStatus> all = new ArrayList<>(size());
        for (int i = 0; i < size(); i++) {
            all.add(status(i));
        }
        return all;
    }

    @Override
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

    @Override
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
