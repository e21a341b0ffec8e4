package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.allInstances;
import static io.weightrelay.lab.faults.LabCase.requireEnded;
import static io.weightrelay.lab.faults.LabCase.requireHolding;

import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import java.util.List;

/**
 * Case 2: a segment owner (a publisher) is killed (SIGKILL) right after a commit and left dead.
 * Every loader's update fails at prepare (before any byte is applied), the dead owner's segment is
 * named, every engine resumes on the generation it serves, byte for byte, not paused. Then the
 * owner is started again (its memory is gone: what it held is reported lost, never served) and the
 * next publish reaches everyone.
 */
final class SegmentOwnerKilledCase {

    private SegmentOwnerKilledCase() {}

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        long serving = fault.active();
        long committed = fault.publish();
        String segment = lab.faults().killPublisher(1);
        // without replicas, everything the dead owner held is gone with it
        fault.destroyedEveryCommitted();

        List<Engines.Ended> ended = fault.updateNoneAdvancing();
        // every engine is told why: its own read of the segment, or the session's failure
        requireEnded(ended, UpdateOutcome.RESUMED_OLD, segment, null);
        fault.ledger().observe(lab, allInstances(lab));
        requireHolding(lab, serving, false, null);
        String failure = String.join("; ", ended.stream().map(Engines.Ended::describe).toList());
        lab.faults().revivePublisher(1);
        return "generation "
                + committed
                + " refused at prepare, every engine resumed on "
                + serving
                + " ("
                + failure
                + "); owner restarted";
    }
}
