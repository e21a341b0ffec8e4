package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;
import static io.weightrelay.lab.faults.LabCase.requireHolding;

import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import java.util.List;

/**
 * Issue 50, scenarios 4 and 8: a byte another loader wrote into a receiver's buffer changes after
 * it landed and before the engines advance, as a flaky link, a late write or bad memory would
 * change it. The stored bytes and every reader's reads are as published, so the readers' proof
 * passes; only the receiver's proof of its buffers can see it. The first instance's loader is
 * started with the lab-only {@code relay.loader.flip-received-file}; while that file exists it
 * flips the first byte of the first write another loader made into its workers, once every sender
 * reported SENT and before it proves its buffers. The session fails before the applied barrier,
 * naming the sender, the receiving worker, its buffer and the generation; none advances, every
 * engine keeps the generation it had (RESUMED_OLD, serving it, where the fetch wrote nothing the
 * engine serves from: compat workers; PAUSED_REBUILD where it did: in-place direct ones); the
 * generation stays active and is not marked corrupt. Once the file is gone the group, its loaders
 * not restarted but registered again (only a new life of the group starts the ended session of that
 * generation again), updates to that same generation, every byte verified.
 */
final class ByteFlippedInFlightCase {

    private ByteFlippedInFlightCase() {}

    private static final int RECEIVER = 0;

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        try (FaultFile flip = FaultFile.onLoader(fault, RECEIVER, "flip-received-file")) {
            String receiver = flip.instance();
            FaultFile.Attempt attempt = flip.update("flip");
            long g = attempt.generation();
            List<Engines.Ended> ended = attempt.ended();
            UpdateOutcome failed = LabCase.failedFetchOutcome(lab);
            for (Engines.Ended e : ended) {
                check(
                        e.outcome() == failed,
                        "a group update with a byte flipped in flight ends "
                                + failed
                                + ": "
                                + e.describe());
            }
            requireHolding(lab, flip.active(), failed == UpdateOutcome.PAUSED_REBUILD, null);
            UpdateSession session = attempt.session();
            String failure = String.valueOf(session.getFailure());
            String sender =
                    session.getParticipants().stream()
                            .map(p -> p.getInstance())
                            .filter(
                                    i ->
                                            !i.equals(receiver)
                                                    && failure.contains(i + " sent into it"))
                            .findFirst()
                            .orElse(null);
            check(
                    session.getState() == LabCase.sessionState(failed)
                            && receiver.equals(session.getFailedInstance())
                            && sender != null
                            && failure.contains("generation " + g + " of ")
                            && failure.contains("did not land as sent")
                            && failure.contains("of " + receiver)
                            && failure.contains("buffer '"),
                    "the session of "
                            + g
                            + " fails at the receiver "
                            + receiver
                            + ", naming the generation, the sender, the worker and its buffer: "
                            + session.getState()
                            + ", "
                            + session.getFailedInstance()
                            + " ("
                            + failure
                            + ")");
            LabCase.requireStillActive(lab, g);
            // The group's session of g ended: a new life of the group (registered again, as an
            // operator rebuilds paused engines) starts it again; the same group would join it.
            lab.reRegisterAll();

            // The flip gone, the same loader process updates with the group to that generation.
            flip.off();
            LabCase.requireUpdated(lab, g, fault.ledger());
            return "session of "
                    + g
                    + " "
                    + session.getState()
                    + " (every engine "
                    + failed
                    + ")"
                    + " at "
                    + receiver
                    + " naming sender "
                    + sender
                    + " ("
                    + LabCase.firstLine(failure)
                    + "); none advanced; generation "
                    + g
                    + " stays active, then the group updated to it, every byte verified";
        }
    }
}
