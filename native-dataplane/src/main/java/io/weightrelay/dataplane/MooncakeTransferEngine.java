package io.weightrelay.dataplane;

import io.weightrelay.dataplane.MooncakeDataplane.Local;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The Transfer Engine of a {@link MooncakeDataplane}: one-sided writes from this data plane's
 * receive segments into any receive segment published under the key prefix (this engine's or
 * another's, resolved from {@code <prefix>mc:seg:<name>} at every submit, so nothing is cached),
 * each task one {@code batch_transfer_sync_write} of Mooncake's Transfer Engine in the agent, run
 * before {@link #submit} returns; a task's failure fails it alone. Checksummed submits sum the
 * local ranges after the bytes moved ({@link #submitChecksummed}). Not provided: probing an owner
 * ({@link #probe} throws {@link MooncakeUnsupportedException}). Thread safe.
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

    /** Registered notify counters; notifies for other names are dropped when drained. */
    private final Map<String, Long> notifies = new HashMap<>();

    @Override
    public TransferBatch submit(List<TransferRequest> requests) {
        return runAll(requests, false);
    }

    /**
     * Runs every task in order, none carrying a notify; with {@code checksummed}, the CRC32C of
     * each completed task's local range (a write's source as sent, a read's destination as it
     * landed).
     */
    private TransferBatch runAll(List<TransferRequest> requests, boolean checksummed) {
        List<TaskStatus> statuses = new ArrayList<>(requests.size());
        List<DataplaneException> failures = new ArrayList<>(requests.size());
        int[] crcs = checksummed ? new int[requests.size()] : null;
        long checksumNanos = 0;
        for (int i = 0; i < requests.size(); i++) {
            TransferRequest r = requests.get(i);
            DataplaneException failure = null;
            try {
                run(r, null, false);
            } catch (DataplaneException e) {
                failure = e;
            }
            if (failure == null && crcs != null) {
                long start = System.nanoTime();
                crcs[i] = dp.local(r.local()).crc32c(r.localOffset(), r.length());
                checksumNanos += System.nanoTime() - start;
            }
            failures.add(failure);
            statuses.add(status(i, r, failure));
        }
        return new MooncakeTransferBatch(statuses, failures, crcs, checksumNanos, null);
    }

    /**
     * Checks and resolves task {@code r}; runs it unless {@code dryRun}; with {@code notifyName} (a
     * write), the target receives that notify once the bytes landed.
     *
     * @return the directory entry of the task's target segment
     */
    private Map<String, String> run(TransferRequest r, String notifyName, boolean dryRun) {
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
        if (dryRun || (r.length() == 0 && notifyName == null)) {
            return target;
        }
        long address = Long.parseLong(target.get("address")) + r.segmentOffset();
        List<long[]> range = List.of(new long[] {r.localOffset(), address, r.length()});
        if (r.op() == TransferRequest.Op.READ) {
            dp.agent().read(local.mapped(), target.get("endpoint"), range);
            dp.byteCounters().read(dp.sameNode(target), r.length());
        } else {
            dp.agent()
                    .write(
                            local.mapped(),
                            target.get("endpoint"),
                            range,
                            notifyName,
                            dp.nodeLabel());
            dp.byteCounters().written(dp.sameNode(target), r.length());
        }
        return target;
    }

    /**
     * The engine a write into {@code target} notifies: the segment's own, or, for memory of a
     * worker's own Transfer Engine ({@link Dataplane#attachForeignSegment}), the engine of the data
     * plane that published it ({@code notify_endpoint}), since the worker's counts no notify.
     */
    private static String notifiedEngine(Map<String, String> target) {
        return target.getOrDefault("notify_endpoint", target.get("endpoint"));
    }

    /**
     * {@link #submit}, and the CRC32C of each completed task's local range, summed in this JVM over
     * the shared-memory file the agent moved the bytes from or into, once the task ended: Mooncake
     * takes no checksum while it moves bytes, so this is a second pass over them ({@link
     * TransferBatch#checksumNanos()}). For a write it is the CRC of the source as sent, provided
     * nobody changed the source during the batch (which no caller may do); the receiver checks its
     * own buffer anyway.
     */
    @Override
    public TransferBatch submitChecksummed(List<TransferRequest> requests) {
        return runAll(requests, true);
    }

    /** {@link #submitWithNotify} with the checksums of {@link #submitChecksummed}. */
    @Override
    public TransferBatch submitChecksummedWithNotify(
            List<TransferRequest> requests, String notifyName) {
        return withNotify(requests, notifyName, true);
    }

    /**
     * Checks every task first (a batch with an invalid task cannot succeed as a whole, so it runs
     * as {@link #submit} does, without notify: the valid tasks run, the invalid fail alone); then
     * runs them all, and only once every one succeeded notifies each distinct engine (agent
     * endpoint) its writes went to, once: as the builtin engine does, however many of that engine's
     * segments the batch wrote into.
     *
     * <p>Mooncake sends a notify only with a write (after that write completed: with the pinned
     * wheel's acknowledged tcp framing, once its bytes were applied at the target). The notify
     * therefore rides on a write of one byte the batch already wrote to that engine (the last byte
     * of its last non-empty write there, the same byte again), issued after every task: so no
     * notify goes out before a later task of the batch ran, and a target whose counter reached its
     * target may read every byte the batch wrote into it. Riding on each segment's last write
     * instead notified an engine once per segment, the first time right after its first segment's
     * writes, before the writes into its other segments had even started: a node delegate waiting
     * for one notify fanned out bytes not yet written (issue 47).
     */
    @Override
    public TransferBatch submitWithNotify(List<TransferRequest> requests, String notifyName) {
        return withNotify(requests, notifyName, false);
    }

    private TransferBatch withNotify(
            List<TransferRequest> requests, String notifyName, boolean checksummed) {
        Map<String, TransferRequest> lastByEngine = new java.util.LinkedHashMap<>();
        Map<String, Map<String, String>> targetByEngine = new HashMap<>();
        boolean anyInvalid = false;
        for (TransferRequest r : requests) {
            try {
                Map<String, String> target = run(r, null, true);
                String engine = notifiedEngine(target);
                if (r.op() == TransferRequest.Op.WRITE
                        && (r.length() > 0 || !lastByEngine.containsKey(engine))) {
                    lastByEngine.put(engine, r);
                    targetByEngine.put(engine, target);
                }
            } catch (DataplaneException x) {
                anyInvalid = true;
            }
        }
        MooncakeTransferBatch batch = (MooncakeTransferBatch) runAll(requests, checksummed);
        // with an invalid or failed task no notify goes out (the valid tasks ran)
        if (anyInvalid || !batch.allCompleted()) {
            return batch;
        }
        DataplaneException notifyFailure = null;
        for (Map.Entry<String, TransferRequest> e : lastByEngine.entrySet()) {
            TransferRequest last = e.getValue();
            if (last.length() == 0) {
                notifyFailure =
                        new MooncakeUnsupportedException(
                                "TransferEngine.submitWithNotify",
                                "Mooncake sends a notify only with a write's bytes, and the batch"
                                        + " writes none into segment '"
                                        + last.segment()
                                        + "'");
                break;
            }
            try {
                notifyAfter(last, targetByEngine.get(e.getKey()), notifyName);
            } catch (DataplaneException x) {
                notifyFailure = x;
                break;
            }
        }
        return batch.withNotifyFailure(notifyFailure);
    }

    /**
     * Sends {@code notifyName} to the engine {@code last}'s target notifies, riding on a write of
     * the last byte {@code last} wrote: into the same place again, or, for a worker's own Transfer
     * Engine memory, into the same offset of the read-back segment of the data plane that published
     * it (scratch memory that only holds what its owner last read back), whose engine counts it.
     */
    private void notifyAfter(TransferRequest last, Map<String, String> target, String notifyName) {
        long localOffset = last.localOffset() + last.length() - 1;
        long segmentOffset = last.segmentOffset() + last.length() - 1;
        String notifyEndpoint = target.get("notify_endpoint");
        if (notifyEndpoint == null) {
            run(
                    TransferRequest.write(
                            last.local(), localOffset, last.segment(), segmentOffset, 1),
                    notifyName,
                    false);
            return;
        }
        long address = Long.parseLong(target.get("notify_address")) + segmentOffset;
        dp.agent()
                .write(
                        dp.local(last.local()).mapped(),
                        notifyEndpoint,
                        List.of(new long[] {localOffset, address, 1}),
                        notifyName,
                        dp.nodeLabel());
    }

    /** Task {@code i}'s end: completed with all its bytes, or failed with {@code failure}. */
    private static TaskStatus status(int i, TransferRequest r, DataplaneException failure) {
        return failure == null
                ? new TaskStatus(i, TaskStatus.State.COMPLETED, r.length(), null)
                : new TaskStatus(i, TaskStatus.State.FAILED, 0, failure.error());
    }

    @Override
    public void transfer(List<TransferRequest> requests, Duration timeout) {
        try (TransferBatch batch = submit(requests)) {
            batch.awaitSuccess(timeout);
        }
    }

    /**
     * Counts the notifies named {@code name} that the agent's Transfer Engine received: they are
     * drained from the agent (Mooncake hands each out once) whenever a counter is read or awaited,
     * and those of unregistered names dropped. Notifies the agent received while it was replaced
     * after a death are lost with it.
     */
    @Override
    public synchronized long registerNotify(String name) {
        drain();
        return notifies.computeIfAbsent(name, n -> 0L);
    }

    @Override
    public synchronized void unregisterNotify(String name) {
        notifies.remove(name);
        notifyAll();
    }

    @Override
    public synchronized long notifyCount(String name) {
        drain();
        return registered(name);
    }

    /**
     * Polls the agent every 20 ms until the counter reaches {@code atLeast}; returns at once, with
     * the last value, when the name is unregistered meanwhile.
     */
    @Override
    public synchronized long awaitNotify(String name, long atLeast, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long value = registered(name);
        while (true) {
            drain();
            Long now = notifies.get(name);
            if (now == null || now >= atLeast) {
                return now == null ? value : now;
            }
            value = now;
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new NotifyTimeoutException(name, atLeast, value);
            }
            try {
                wait(Math.max(1, Math.min(20, left / 1_000_000)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new NotifyTimeoutException(name, atLeast, value);
            }
        }
    }

    private long registered(String name) {
        Long value = notifies.get(name);
        if (value == null) {
            throw new DataplaneException(
                    DataplaneError.NOT_FOUND,
                    "notify counter '" + name + "' is not registered (registerNotify first)");
        }
        return value;
    }

    private void drain() {
        for (String name : dp.agent().notifies()) {
            notifies.computeIfPresent(name, (n, v) -> v + 1);
        }
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
