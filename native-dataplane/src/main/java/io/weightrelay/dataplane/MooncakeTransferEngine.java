package io.weightrelay.dataplane;

import io.weightrelay.dataplane.MooncakeDataplane.Local;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The Transfer Engine of a {@link MooncakeDataplane}: one-sided writes from this data plane's
 * receive segments into any receive segment published under the key prefix (this engine's or
 * another's, resolved from {@code <prefix>mc:seg:<name>} at every submit, so nothing is cached),
 * each task one {@code batch_transfer_sync_write} of Mooncake's Transfer Engine in the agent, run
 * before {@link #submit} returns; a task's failure fails it alone. Not provided (each throws {@link
 * MooncakeUnsupportedException} naming it, or fails the task with it): reads (the agent drives only
 * Mooncake's write), notifies, CRC32C while moving bytes, and probing an owner. Thread safe.
 */
final class MooncakeTransferEngine implements TransferEngine {
    private final MooncakeDataplane dp;

    MooncakeTransferEngine(MooncakeDataplane dp) {
        this.dp = dp;
    }

    @Override
    public String nodeLabel() {
        return dp.nodeLabel();
    }

    @Override
    public TransferBatch submit(List<TransferRequest> requests) {
        List<TaskStatus> statuses = new ArrayList<>(requests.size());
        List<DataplaneException> failures = new ArrayList<>(requests.size());
        for (int i = 0; i < requests.size(); i++) {
            TransferRequest r = requests.get(i);
            DataplaneException failure;
            try {
                run(r);
                failure = null;
            } catch (DataplaneException e) {
                failure = e;
            }
            failures.add(failure);
            statuses.add(
                    failure == null
                            ? new TaskStatus(i, TaskStatus.State.COMPLETED, r.length(), null)
                            : new TaskStatus(i, TaskStatus.State.FAILED, 0, failure.error()));
        }
        return new MooncakeTransferBatch(statuses, failures);
    }

    private void run(TransferRequest r) {
        Local local = dp.local(r.local());
        if (r.localOffset() < 0
                || r.length() < 0
                || r.localOffset() > r.local().size() - r.length()) {
            throw new OutOfBoundsException(
                    r.local().describe(), r.localOffset(), r.length(), r.local().size());
        }
        Map<String, String> target = dp.redis().hgetall(dp.directoryKey(r.segment()));
        if (target.isEmpty()) {
            throw new UnknownSegmentException(
                    r.segment(),
                    "no Mooncake engine published segment '"
                            + r.segment()
                            + "' ("
                            + dp.directoryKey(r.segment())
                            + ")");
        }
        long size = Long.parseLong(target.get("size"));
        if (r.segmentOffset() < 0 || r.segmentOffset() > size - r.length()) {
            throw new OutOfBoundsException(
                    "segment '" + r.segment() + "'", r.segmentOffset(), r.length(), size);
        }
        if (r.length() == 0) {
            return;
        }
        long address = Long.parseLong(target.get("address")) + r.segmentOffset();
        List<long[]> range = List.of(new long[] {r.localOffset(), address, r.length()});
        if (r.op() == TransferRequest.Op.READ) {
            dp.agent().read(local.mapped(), target.get("endpoint"), range);
        } else {
            dp.agent().write(local.mapped(), target.get("endpoint"), range);
        }
    }

    @Override
    public TransferBatch submitChecksummed(List<TransferRequest> requests) {
        throw new MooncakeUnsupportedException(
                "TransferEngine.submitChecksummed",
                "Mooncake's Transfer Engine takes no CRC32C while it moves bytes");
    }

    @Override
    public TransferBatch submitWithNotify(List<TransferRequest> requests, String notifyName) {
        throw noNotifies("TransferEngine.submitWithNotify");
    }

    @Override
    public void transfer(List<TransferRequest> requests, Duration timeout) {
        try (TransferBatch batch = submit(requests)) {
            batch.awaitSuccess(timeout);
        }
    }

    @Override
    public long registerNotify(String name) {
        throw noNotifies("TransferEngine.registerNotify");
    }

    @Override
    public void unregisterNotify(String name) {
        throw noNotifies("TransferEngine.unregisterNotify");
    }

    @Override
    public long notifyCount(String name) {
        throw noNotifies("TransferEngine.notifyCount");
    }

    @Override
    public long awaitNotify(String name, long atLeast, Duration timeout) {
        throw noNotifies("TransferEngine.awaitNotify");
    }

    private static MooncakeUnsupportedException noNotifies(String method) {
        return new MooncakeUnsupportedException(
                method, "the agent does not drive Mooncake's Transfer Engine notifies yet");
    }

    @Override
    public void probe(String segment) {
        throw new MooncakeUnsupportedException(
                "TransferEngine.probe",
                "the agent has no command that checks another engine answers; a write to a gone"
                        + " owner fails with MooncakeOperationException naming its endpoint");
    }

    /**
     * Returns 0: this engine caches no segment (every submit reads the directory entries afresh),
     * so there is nothing to forget.
     */
    @Override
    public int revalidate() {
        return 0;
    }

    /**
     * Returns 0: this engine maps no segment of another engine (Mooncake moves the bytes over its
     * own transport), so there is nothing to map ahead.
     */
    @Override
    public int mapNodeSegments() {
        return 0;
    }
}
