package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.UPDATE_TIMEOUT;
import static io.weightrelay.lab.faults.LabCase.UPDATE_WAIT;
import static io.weightrelay.lab.faults.LabCase.allInstances;
import static io.weightrelay.lab.faults.LabCase.check;
import static io.weightrelay.lab.faults.LabCase.requireEnded;
import static io.weightrelay.lab.faults.LabCase.requireHolding;

import io.weightrelay.api.control.client.model.ParticipantState;
import io.weightrelay.api.control.client.model.SessionState;
import io.weightrelay.api.control.client.model.UpdatePhase;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.plan.Slice;
import java.io.IOException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

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

    private static final int ATTEMPTS = 5;

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
        Ledger ledger = fault.ledger();
        LabCluster lab = fault.lab();
        long previous = fault.active();
        String victimId = lab.engines().get(victim).instance();
        // asked while every loader answers: the victim's will not
        UpdateOutcome failed = LabCase.failedFetchOutcome(lab);
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            long g = fault.publish();
            Map<String, Long> before = Ledger.generations(lab);
            Engines.Running running = Engines.start(lab.engines(), PHASE_TIMEOUT);
            String caught = freezeInApply(lab, g, victimId, lab.faults().loaderPid(victim));
            if (caught == null) {
                // the apply ended before the watch saw it: let it finish, try the next generation
                List<Engines.Ended> ended = running.await(UPDATE_WAIT);
                for (Engines.Ended e : ended) {
                    check(e.updated(), "an update with no fault: " + e.describe());
                }
                ledger.observe(lab, allInstances(lab));
                previous = g;
                continue;
            }
            lab.faults().killLoader(victim);
            long killed = System.nanoTime();
            List<Engines.Ended> ended = running.await(UPDATE_WAIT);
            double waited = (System.nanoTime() - killed) / 1e9;
            // every peer of the dead loader resumes its old generation, or pauses for rebuild where
            // the fetch wrote what it serves from; its own engine's calls fail
            requireEnded(ended, failed, victimId, victimId);
            ledger.noneAdvanced(lab, before);
            ledger.observe(lab, Set.of());
            UpdateSession session = lab.session(g, "lab");
            check(
                    session.getState() == LabCase.sessionState(failed),
                    "the session ends " + failed + ": " + session.getState());
            // The session names who ended it (failedInstance: the dead loader when its peers
            // timed out waiting for it, else the peer that found it gone) and why, naming the
            // dead loader or one of its workers (their ids are <instance>-r<rank>).
            String why = String.valueOf(session.getFailure());
            check(
                    victimId.equals(session.getFailedInstance())
                            || java.util.regex.Pattern.compile(
                                            "\\b" + java.util.regex.Pattern.quote(victimId) + "\\b")
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

            RolloutEngine fresh = lab.restartInstance(victim);
            List<Engines.Ended> alone = Engines.update(List.of(fresh), UPDATE_TIMEOUT, UPDATE_WAIT);
            check(
                    alone.get(0).updated(),
                    "the restarted loader's update: " + alone.get(0).describe());
            long active = lab.activeGeneration().getGeneration();
            check(
                    alone.get(0).progress().getGeneration() == active,
                    "the restarted loader loaded the active generation " + active);
            long verified = lab.verify(fresh, active);
            return victimId
                    + (duty == null ? "" : ", " + duty + ",")
                    + " killed "
                    + caught
                    + " (attempt "
                    + attempt
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
        throw new AssertionError(
                "the apply of "
                        + victimId
                        + " never lasted long enough to be caught in "
                        + ATTEMPTS
                        + " tries");
    }

    /**
     * Watches the session of {@code generation} until the apply barrier is open and {@code
     * instance} has not reported APPLIED, then freezes its loader and checks again. Returns the
     * phase it was frozen in, or null if the apply ended first (the loader is running then).
     */
    static String freezeInApply(LabCluster lab, long generation, String instance, long pid)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            UpdateSession s;
            try {
                s = lab.session(generation, "lab");
            } catch (RuntimeException notYet) {
                Thread.sleep(2);
                continue;
            }
            if (s.getState() != SessionState.APPLYING && s.getState() != SessionState.PREPARING) {
                return null;
            }
            UpdatePhase phase = phase(s, instance);
            if (s.getState() == SessionState.APPLYING && before(phase)) {
                signal("STOP", pid);
                UpdatePhase frozen = phase(lab.session(generation, "lab"), instance);
                if (before(frozen)) {
                    return "in " + frozen + " with the apply barrier open";
                }
                signal("CONT", pid);
                return null;
            }
        }
        return null;
    }

    private static boolean before(UpdatePhase phase) {
        return phase == UpdatePhase.PREPARED || phase == UpdatePhase.APPLYING;
    }

    private static UpdatePhase phase(UpdateSession s, String instance) {
        for (ParticipantState p : s.getParticipants()) {
            if (p.getInstance().equals(instance)) {
                return p.getPhase();
            }
        }
        return null;
    }

    static void signal(String signal, long pid) throws IOException, InterruptedException {
        Process p =
                new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IOException("kill -" + signal + " " + pid + " failed");
        }
    }
}
