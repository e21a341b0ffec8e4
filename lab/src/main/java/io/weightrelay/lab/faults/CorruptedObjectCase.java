package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;
import static io.weightrelay.lab.faults.LabCase.requireHolding;

import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.manifest.StoredFragment;
import java.util.List;
import java.util.Set;

/**
 * Case 7: one byte of a stored object is flipped in its publisher's shared-memory segment after the
 * generation was committed (directory and registered checksum untouched). The update fails at the
 * applied barrier, before any engine advances, every instance naming the object: each resumes the
 * generation it served (RESUMED_OLD) where its fetch wrote nothing it serves from (compat workers),
 * or pauses for rebuild where it did (in-place direct); the generation is marked corrupt and the
 * one before it is active again.
 */
final class CorruptedObjectCase {

    private CorruptedObjectCase() {}

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        long good = fault.active();
        long bad = fault.publish();
        StoredFragment victim = lab.faults().corruptAnObject(bad);
        fault.destroyed(bad);

        UpdateOutcome failed = LabCase.failedFetchOutcome(lab);
        List<Engines.Ended> ended = fault.updateNoneAdvancing();
        for (Engines.Ended e : ended) {
            check(e.outcome() == failed, "expected " + failed + ": " + e.describe());
            check(
                    e.progress().getError() != null
                            && e.progress().getError().contains(victim.fragment())
                            && e.progress()
                                    .getError()
                                    .contains("does not match its registered checksum"),
                    "the failure names the object "
                            + victim.fragment()
                            + " and its checksum: "
                            + e.describe());
        }
        fault.ledger().observe(lab, Set.of());
        requireHolding(lab, good, failed == UpdateOutcome.PAUSED_REBUILD, null);
        check(
                victim.fragment().equals(lab.generation(bad).getCorruptObject()),
                "generation " + bad + " is marked corrupt naming " + victim.fragment());
        check(
                lab.activeGeneration().getGeneration() == good,
                "the generation before the corrupt one is active again");
        return "generation "
                + bad
                + " refused before any engine advanced (every one "
                + failed
                + "): "
                + ended.get(0).progress().getError()
                + "; "
                + good
                + " active again";
    }
}
