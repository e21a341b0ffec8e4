package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.allInstances;
import static io.weightrelay.lab.faults.LabCase.check;
import static io.weightrelay.lab.faults.LabCase.requireEnded;
import static io.weightrelay.lab.faults.LabCase.requireHolding;

import io.weightrelay.api.control.client.model.ParticipantState;
import io.weightrelay.api.control.client.model.SessionState;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/**
 * Issue 50, scenario 5: an instance's loader is killed (SIGKILL) inside the group's apply, caught
 * there as {@code loader-killed-mid-apply} catches it, and never restarted, as when its node is
 * lost. The survivors end on the generation they served, the session naming the dead loader:
 * resumed (RESUMED_OLD) where their fetch wrote nothing they serve from (compat workers), paused
 * for rebuild where it did (in-place direct). Once its registration expires the survivors, rebuilt
 * only if paused, update to that same generation, with no new publish: the session that ended is
 * started again with the group as it is now (when it could not be, the survivors stayed frozen
 * until the trainer's next step). Then the instance comes back with a fresh loader and loads the
 * active generation alone, still with no republish.
 */
final class LoaderDeadForGoodMidApplyCase {

    private LoaderDeadForGoodMidApplyCase() {}

    /**
     * The timeout of the update the loader dies in: the survivors wait this long for it at the
     * all-applied barrier, unless the session fails sooner.
     */
    static final Duration PHASE_TIMEOUT = Duration.ofSeconds(30);

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        int victim = lab.engines().size() - 1;
        String dead = lab.engines().get(victim).instance();
        // asked while every loader answers: the dead one's will not
        UpdateOutcome outcome = LabCase.failedFetchOutcome(lab);
        boolean paused = outcome == UpdateOutcome.PAUSED_REBUILD;
        MidApply caught =
                MidApply.caught(
                        fault,
                        PHASE_TIMEOUT,
                        "the apply of " + dead,
                        g -> MidApply.freezeLoader(lab, g, dead, lab.faults().loaderPid(victim)));
        long g = caught.generation();
        long previous = caught.previous();
        lab.faults().killLoader(victim);
        long killed = System.nanoTime();
        List<Engines.Ended> ended = caught.awaitNoneAdvancing(fault);
        requireEnded(ended, outcome, dead, dead);
        requireHolding(lab, previous, paused, dead);
        UpdateSession failed = lab.session(g, "lab");
        check(
                failed.getState() == LabCase.sessionState(outcome)
                        && (dead.equals(failed.getFailedInstance())
                                || String.valueOf(failed.getFailure()).contains(dead)),
                "the session ends "
                        + outcome
                        + " naming the dead loader "
                        + dead
                        + ": "
                        + failed.getState()
                        + ", "
                        + failed.getFailedInstance()
                        + " ("
                        + failed.getFailure()
                        + ")");

        // Its registration expires: the group is the survivors now.
        LoaderDiedForGoodCase.awaitGone(lab, dead, killed);
        double goneAfter = (System.nanoTime() - killed) / 1e9;

        // The survivors update to the same generation, nothing published: paused ones are
        // rebuilt first, resumed ones update as they are (the group lost a member, so its
        // ended session is started again without it).
        List<RolloutEngine> survivors = new ArrayList<>();
        for (int i = 0; i < lab.engines().size(); i++) {
            if (i != victim) {
                if (paused) {
                    lab.reRegister(i);
                }
                survivors.add(lab.engines().get(i));
            }
        }
        LabCase.requireUpdatedTo(
                survivors,
                g,
                "a survivor, without the dead loader and no new publish, re-prepares");
        long verified = lab.verify(survivors, g);
        requireHolding(lab, g, false, dead);
        UpdateSession again = lab.session(g, "lab");
        Set<String> members = new TreeSet<>();
        for (ParticipantState p : again.getParticipants()) {
            members.add(p.getInstance());
        }
        Set<String> expected = new TreeSet<>(allInstances(lab));
        expected.remove(dead);
        check(
                again.getState() == SessionState.DONE && members.equals(expected),
                "the session of "
                        + g
                        + " ran again with the survivors "
                        + expected
                        + ": "
                        + again.getState()
                        + " with "
                        + members);
        check(
                lab.activeGeneration().getGeneration() == g,
                "nothing was published: " + g + " is still the active generation");

        // The instance comes back with a fresh loader and loads it alone, no republish.
        long freshVerified = fault.restartLoadingAlone(victim, g).verified();
        return String.format(
                Locale.ROOT,
                "%s killed %s (attempt %d) and left dead; survivors %s on %d, session"
                        + " naming %s; its registration expired %.1f s after the kill; %s"
                        + " re-prepared %d with no publish (%d bytes verified, session %s);"
                        + " %s restarted loaded %d (%d bytes verified)",
                dead,
                caught.how(),
                caught.attempt(),
                outcome,
                previous,
                failed.getFailedInstance(),
                goneAfter,
                expected,
                g,
                verified,
                again.getState(),
                dead,
                g,
                freshVerified);
    }
}
