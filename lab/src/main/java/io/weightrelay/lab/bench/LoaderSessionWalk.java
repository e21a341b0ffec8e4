package io.weightrelay.lab.bench;

import io.weightrelay.api.control.client.UpdatesApi;
import io.weightrelay.api.control.client.model.BarrierName;
import io.weightrelay.api.control.client.model.BarrierStatus;
import io.weightrelay.api.control.client.model.PhaseReport;
import io.weightrelay.api.control.client.model.ReportedPhase;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.plan.Slice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One loader's way through an update session, as loader-service walks it, for the control-plane
 * bench ({@link ControlPlaneBenchRun}): PREPARED and APPLIED (with the checksums of every range its
 * slice reads) each reported and waited for in one call, as loader-service arrives at a barrier;
 * APPLYING reported, then the session watch of its apply; POST_APPLIED reported, and its barrier
 * awaited, which ends the bench's session step. Thread safe: every loader of a run walks at once.
 */
final class LoaderSessionWalk {

    /** How long one barrier call may wait, in seconds. */
    private static final int WAIT = 30;

    private final UpdatesApi updates;
    private final String model;
    private final String group;

    LoaderSessionWalk(UpdatesApi updates, String model, String group) {
        this.updates = updates;
        this.model = model;
        this.group = group;
    }

    /**
     * Walks {@code instance}'s session to {@code generation} (registered at {@code epoch}, reading
     * {@code slice}) to its end; returns how long its session watch took, in milliseconds.
     */
    long walk(long generation, String instance, long epoch, Slice slice) {
        arrive(
                generation,
                instance,
                phase(instance, epoch, ReportedPhase.PREPARED),
                BarrierName.PREPARED);
        updates.reportUpdatePhase(
                model, generation, group, phase(instance, epoch, ReportedPhase.APPLYING));
        // The session watch of a loader in its apply (relay.loader.session-watch): a touch of
        // the session, every loader at once here, where they would spread over its period.
        long watchStarted = System.nanoTime();
        BarrierStatus watched =
                updates.awaitBarrier(model, generation, group, BarrierName.APPLIED, 0);
        if (Boolean.TRUE.equals(watched.getFailed())) {
            throw new IllegalStateException(
                    instance + ": the session watch found it failed: " + watched.getFailure());
        }
        long watchMs = (System.nanoTime() - watchStarted) / 1_000_000;
        // The stand-in's objects are all zeros: every range read has the CRC32C of its zeros,
        // so control-api's proof at the all-applied barrier runs at full scale.
        arrive(
                generation,
                instance,
                phase(instance, epoch, ReportedPhase.APPLIED)
                        .checksums(zeroChecksums(slice).encode()),
                BarrierName.APPLIED);
        updates.reportUpdatePhase(
                model, generation, group, phase(instance, epoch, ReportedPhase.POST_APPLIED));
        await(
                generation,
                instance,
                BarrierName.POST_APPLIED,
                updates.awaitBarrier(model, generation, group, BarrierName.POST_APPLIED, WAIT));
        return watchMs;
    }

    private static RangeChecksums zeroChecksums(Slice slice) {
        List<RangeChecksums.Entry> entries = new ArrayList<>();
        for (int read = 0; read < slice.readCount(); read++) {
            String object = slice.objectId(slice.readObject(read));
            for (int r = slice.rangeFirst(read); r < slice.rangeEnd(read); r++) {
                long length = slice.rangeLength(r);
                entries.add(
                        new RangeChecksums.Entry(
                                object, slice.rangeStart(r), length, Crc32c.zeros(length)));
            }
        }
        return new RangeChecksums(entries);
    }

    private static PhaseReport phase(String instance, long epoch, ReportedPhase phase) {
        return new PhaseReport().instance(instance).epoch(epoch).phase(phase);
    }

    /**
     * Reports {@code report} and waits for {@code barrier} in one call, as loader-service arrives,
     * then long-polls the barrier while it stays shut.
     */
    private void arrive(long generation, String instance, PhaseReport report, BarrierName barrier) {
        await(
                generation,
                instance,
                barrier,
                updates.arriveAtBarrier(model, generation, group, barrier, report, WAIT));
    }

    /** Waits from {@code status} on until {@code barrier} opens, for at most two minutes. */
    private void await(
            long generation, String instance, BarrierName barrier, BarrierStatus status) {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (true) {
            if (Boolean.TRUE.equals(status.getOpen())) {
                return;
            }
            if (Boolean.TRUE.equals(status.getFailed())) {
                throw new IllegalStateException(
                        instance
                                + ": barrier "
                                + barrier.getValue()
                                + " failed ("
                                + status.getFailedInstance()
                                + ")");
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new IllegalStateException(
                        instance
                                + ": barrier "
                                + barrier.getValue()
                                + " did not open in 2 minutes");
            }
            status = updates.awaitBarrier(model, generation, group, barrier, WAIT);
        }
    }
}
