package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.UPDATE_WAIT;
import static io.weightrelay.lab.faults.LabCase.check;
import static io.weightrelay.lab.faults.LabCase.requireEnded;
import static io.weightrelay.lab.faults.LabCase.requireHolding;

import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.plan.Slice;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Case 3: one instance's loader is killed (SIGKILL) while the group applies. To kill it inside the
 * apply, the lab watches the update session and freezes the loader (SIGSTOP) the moment the apply
 * barrier is open and it has not reported APPLIED; if it is still short of APPLIED when frozen, it
 * is killed. No other instance advances: each ends on the generation it served, RESUMED_OLD and
 * serving it where the fetch wrote nothing it serves from (compat workers), paused for rebuild
 * where it did (in-place direct workers); the session ends the same way naming the dead loader, and
 * a fresh loader started in its place loads the active generation byte for byte.
 *
 * <p>In compat mode the victim is the first instance. In parameter-direct mode ({@link
 * #injectIntoRelayDelegate}) it is a loader the plan makes a relay delegate: the bytes another
 * instance's workers need cross to its node once, into its buffers, and it copies them on; its
 * neighbour's bytes are then missing and must never be served.
 */
final class LoaderKilledMidApplyCase {

    private LoaderKilledMidApplyCase() {}

    /**
     * The timeout of the update the loader dies in: its peers wait this long for it at the
     * all-applied barrier before the session fails naming it.
     */
    static final Duration PHASE_TIMEOUT = Duration.ofSeconds(60);

    /** Kills the first instance's loader mid-apply. */
    static String inject(LabCase.Fault fault) throws Exception {
        return kill(fault, 0, null);
    }

    /**
     * Kills, mid-apply, the loader of an instance that relays bytes to another instance's workers
     * in the plan of the active generation (the one that reads least, then the first).
     */
    static String injectIntoRelayDelegate(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        String planId = lab.session(fault.active(), "lab").getPlanId();
        RelayDuty duty = null;
        for (int i = 0; i < lab.engines().size(); i++) {
            RelayDuty d =
                    RelayDuty.of(i, planId, lab.slice(planId, lab.engines().get(i).instance()));
            if (d.relayedBytes() > 0 && (duty == null || d.reads() < duty.reads())) {
                duty = d;
            }
        }
        check(duty != null, "plan " + planId + " makes no loader a relay delegate");
        return kill(fault, duty.index(), duty);
    }

    /**
     * What loader {@code index} does for others in plan {@code planId}: the reads it makes and the
     * bytes it copies, as a relay delegate, into the workers of {@code targets}.
     */
    record RelayDuty(int index, String planId, int reads, long relayedBytes, Set<String> targets) {

        static RelayDuty of(int index, String planId, Slice slice) {
            Set<String> mine = new HashSet<>(slice.workers());
            Set<String> targets = new TreeSet<>();
            int reads = 0;
            long relayed = 0;
            for (int b = 0; b < slice.batchCount(); b++) {
                Slice.Batch batch = slice.batch(b);
                reads += batch.reads().size();
                for (Slice.FanoutOp f : batch.fanouts()) {
                    if (!mine.contains(f.delegate())) {
                        continue;
                    }
                    for (String t : f.targets()) {
                        if (!mine.contains(t)) {
                            relayed += f.bytes();
                            targets.add(t);
                        }
                    }
                }
            }
            return new RelayDuty(index, planId, reads, relayed, targets);
        }

        @Override
        public String toString() {
            return "a relay delegate in plan "
                    + planId.substring(0, 12)
                    + " ("
                    + relayedBytes
                    + " bytes to "
                    + String.join(", ", targets)
                    + ", "
                    + reads
                    + " reads of its own)";
        }
    }

    /**
     * Kills loader {@code victim} mid-apply and proves what the group did; {@code duty} (or null)
     * is what the plan of the killed update makes it do for its peers as a relay delegate.
     */
    private static String kill(LabCase.Fault fault, int victim, RelayDuty duty) throws Exception {
        LabCluster lab = fault.lab();
        String victimId = lab.engines().get(victim).instance();
        // asked while every loader answers: the victim's will not
        UpdateOutcome failed = LabCase.failedFetchOutcome(lab);
        MidApply caught =
                MidApply.caught(
                        fault,
                        PHASE_TIMEOUT,
                        "the apply of " + victimId,
                        g ->
                                MidApply.freezeLoader(
                                        lab, g, victimId, lab.faults().loaderPid(victim)));
        long g = caught.generation();
        long previous = caught.previous();
        lab.faults().killLoader(victim);
        long killed = System.nanoTime();
        List<Engines.Ended> ended = caught.running().await(UPDATE_WAIT);
        double waited = (System.nanoTime() - killed) / 1e9;
        caught.noneAdvanced(fault);
        // every peer of the dead loader resumes its old generation, or pauses for rebuild where
        // the fetch wrote what it serves from; its own engine's calls fail
        requireEnded(ended, failed, victimId, victimId);
        UpdateSession session = lab.session(g, "lab");
        LabCase.requireSessionEnded(session, failed);
        // The session names who ended it (failedInstance: the dead loader when its peers timed
        // out waiting for it, else the peer that found it gone) and why, naming the dead loader
        // or one of its workers (their ids are <instance>-r<rank>).
        String why = String.valueOf(session.getFailure());
        check(
                victimId.equals(session.getFailedInstance())
                        || Pattern.compile("\\b" + Pattern.quote(victimId) + "\\b")
                                .matcher(why)
                                .find(),
                "the session names the dead loader "
                        + victimId
                        + ": "
                        + session.getFailedInstance()
                        + ", "
                        + why);
        requireHolding(lab, previous, failed == UpdateOutcome.PAUSED_REBUILD, victimId);
        if (duty != null) {
            check(
                    duty.planId().equals(session.getPlanId()),
                    "the killed update ran plan "
                            + duty.planId()
                            + ", in which "
                            + victimId
                            + " relays: "
                            + session.getPlanId());
        }

        long active = lab.activeGeneration().getGeneration();
        long verified = fault.restartLoadingAlone(victim, active).verified();
        return victimId
                + (duty == null ? "" : ", " + duty + ",")
                + " killed "
                + caught.how()
                + " (attempt "
                + caught.attempt()
                + "); session "
                + session.getState()
                + " naming "
                + session.getFailedInstance()
                + " ("
                + session.getFailure()
                + ") "
                + String.format("%.1f", waited)
                + " s after the kill, peers "
                + failed
                + " on "
                + previous
                + "; restarted it loaded "
                + active
                + ", "
                + verified
                + " bytes verified";
    }
}
