package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.SessionState;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.time.Duration;
import java.util.List;

/**
 * A segment owner (the second trainer node's publisher) is killed (SIGKILL) while the group reads
 * its segment inside the apply: the case watches the update session in the lab's Redis, freezes the
 * owner (SIGSTOP) the moment the session is APPLYING and, once the session still applies a moment
 * later with a loader short of APPLIED (its reads of the frozen owner in flight), kills it. No
 * engine advances on the partial bytes: every one ends paused for rebuild or resumed, on the
 * generation it served, and every failure and the session name the dead segment. Without replicas
 * the owner's memory held part of every generation, so once it is started again what it held is
 * reported LOST, never served; the engines are rebuilt and the trainer's next publish reaches every
 * one of them.
 */
final class SegmentOwnerKilledMidApplyCase {

    private SegmentOwnerKilledMidApplyCase() {}

    private static final int OWNER = 1;

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        try (SessionWatch watch = new SessionWatch(lab)) {
            MidApply caught =
                    MidApply.caught(
                            fault,
                            LoaderKilledMidApplyCase.PHASE_TIMEOUT,
                            "the group's apply",
                            g -> watch.freezeOwnerInApply(g, lab.faults().publisherPid(OWNER)));
            // SIGKILL of the frozen owner: its connections reset under the reads in flight
            String segment = lab.faults().killPublisher(OWNER);
            // without replicas, everything the dead owner held is gone with it
            fault.destroyedEveryCommitted();
            return afterKill(fault, caught, segment);
        }
    }

    private static String afterKill(LabCase.Fault fault, MidApply caught, String segment)
            throws Exception {
        long g = caught.generation();
        long previous = caught.previous();
        LabCluster lab = fault.lab();
        List<Engines.Ended> ended = caught.awaitNoneAdvancing(fault);
        for (Engines.Ended e : ended) {
            check(
                    e.outcome() == UpdateOutcome.PAUSED_REBUILD
                            || e.outcome() == UpdateOutcome.RESUMED_OLD,
                    "the update ends paused or resumed: " + e.describe());
            check(
                    segment.equals(e.progress().getFailingPeer())
                            || String.valueOf(e.progress().getError()).contains(segment),
                    "the failure names the dead segment " + segment + ": " + e.describe());
        }
        for (RolloutEngine engine : lab.engines()) {
            Long held = engine.status().getGeneration();
            check(
                    Long.valueOf(previous).equals(held),
                    engine.instance() + " stays on the whole generation " + previous + ": " + held);
        }
        UpdateSession session = lab.session(g, "lab");
        check(
                (session.getState() == SessionState.PAUSED_REBUILD
                                || session.getState() == SessionState.RESUMED_OLD)
                        && String.valueOf(session.getFailure()).contains(segment),
                "the session fails naming the dead segment "
                        + segment
                        + ": "
                        + session.getState()
                        + " ("
                        + session.getFailure()
                        + ")");
        String outcomes = String.join("; ", ended.stream().map(Engines.Ended::describe).toList());

        lab.faults().revivePublisher(OWNER);
        // the restarted owner re-creates its segment: what the dead one held is LOST
        GenerationState state =
                lab.awaitGenerationState(g, GenerationState.LOST, Duration.ofSeconds(30));
        check(
                state == GenerationState.LOST,
                "generation " + g + ", half in the dead segment, is LOST: " + state);
        // rebuilt, as an operator would: the suite's next publish reaches every engine
        lab.reRegisterAll();
        return "owner of "
                + segment
                + " frozen "
                + caught.how()
                + " (attempt "
                + caught.attempt()
                + "), then killed; "
                + outcomes
                + "; every engine on "
                + previous
                + "; session "
                + session.getState()
                + "; owner restarted, "
                + g
                + " LOST";
    }
}
