package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;
import static io.weightrelay.lab.faults.LabCase.requireHolding;

import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.StoredFragment;
import java.util.List;
import java.util.Set;

/**
 * Case 7: one byte of a stored object is flipped in its publisher's shared-memory segment after the
 * generation was committed (directory and registered checksum untouched). The update fails before
 * any engine advances, every instance pauses for rebuild naming the object, the generation is
 * marked corrupt and the one before it is active again.
 */
final class CorruptedObjectCase {

    private CorruptedObjectCase() {}

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        long good = fault.active();
        long bad = fault.publish();
        StoredFragment victim =
                lab.manifest().fragments().stream()
                        .filter(f -> f.bytes() > 0)
                        .findFirst()
                        .orElseThrow();
        lab.faults()
                .corruptStoredByte(
                        new GenerationId(lab.manifest().model(), bad).objectKey(victim.fragment()),
                        victim.bytes() / 2);
        fault.destroyed(bad);

        List<Engines.Ended> ended = fault.updateNoneAdvancing();
        for (Engines.Ended e : ended) {
            check(
                    e.outcome() == UpdateOutcome.PAUSED_REBUILD,
                    "expected PAUSED_REBUILD: " + e.describe());
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
        requireHolding(lab, good, true, null);
        check(
                victim.fragment().equals(lab.generation(bad).getCorruptObject()),
                "generation " + bad + " is marked corrupt naming " + victim.fragment());
        check(
                lab.activeGeneration().getGeneration() == good,
                "the generation before the corrupt one is active again");
        return "generation "
                + bad
                + " refused before any engine advanced: "
                + ended.get(0).progress().getError()
                + "; "
                + good
                + " active again";
    }
}
