package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.UPDATE_WAIT;
import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.lab.cluster.LabCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Issue 50, scenario 3, from the reader's side: one loader's own reads go wrong, as on a host with
 * a failing NIC or bad memory, unlike {@code lying-reader}, where a third party reports for it. The
 * first instance's loader is started with the lab-only {@code relay.loader.flaky-reads-file}; while
 * that file exists every other object read of an update goes wrong: first it fails with an I/O
 * error, then (another generation) it lands with a byte flipped, checksummed as it landed. Each
 * time only the group's session fails, naming that reader; none advances; the generation is not
 * marked corrupt and stays active (control-api reads the disputed object back and finds it as
 * published). Once the file is gone the same reader, not restarted, updates with the group to that
 * generation, every byte verified.
 */
final class FlakyReaderCase {

    private FlakyReaderCase() {}

    private static final String GROUP = "lab";
    private static final int READER = 0;

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        Ledger ledger = fault.ledger();
        Path flaky = Files.createTempFile("wr-flaky-reads-", "");
        Files.delete(flaky);
        try {
            lab.faults().restartLoader(READER, List.of("--relay.loader.flaky-reads-file=" + flaky));
            String reader = lab.engines().get(READER).instance();
            // healthy while the file is absent: the group, the fresh loader too, holds the active
            long active = lab.activeGeneration().getGeneration();
            LabCase.requireUpdated(lab, active, ledger);

            List<String> seen = new ArrayList<>();
            for (String mode : List.of("fail", "wrong-bytes")) {
                Files.writeString(flaky, mode);
                long g = fault.publish();
                Map<String, Long> before = Ledger.generations(lab);
                List<Engines.Ended> ended =
                        Engines.update(
                                lab.engines(), LoaderKilledMidApplyCase.PHASE_TIMEOUT, UPDATE_WAIT);
                for (Engines.Ended e : ended) {
                    check(!e.updated(), "a group update with a flaky reader: " + e.describe());
                }
                ledger.noneAdvanced(lab, before);
                ledger.observe(lab, Set.of());
                UpdateSession session = lab.session(g, GROUP);
                check(
                        reader.equals(session.getFailedInstance()),
                        "the session of "
                                + g
                                + " names the flaky reader "
                                + reader
                                + " ("
                                + mode
                                + "): "
                                + session.getState()
                                + ", "
                                + session.getFailedInstance()
                                + " ("
                                + session.getFailure()
                                + ")");
                if (mode.equals("wrong-bytes")) {
                    check(
                            String.valueOf(session.getFailure())
                                    .contains("does not match the stored bytes"),
                            "control-api found the stored bytes as published: "
                                    + session.getFailure());
                }
                Generation disputed = lab.generation(g);
                check(
                        disputed.getCorruptObject() == null
                                && disputed.getState() == GenerationState.ACTIVE
                                && lab.activeGeneration().getGeneration() == g,
                        "generation "
                                + g
                                + " is not marked corrupt for the others and stays active: "
                                + disputed.getState()
                                + ", corrupt object "
                                + disputed.getCorruptObject());
                seen.add(
                        mode
                                + ": "
                                + session.getState()
                                + " naming "
                                + reader
                                + " ("
                                + firstLine(session.getFailure())
                                + ")");
                // The group's session of g ended: a new life of the group (registered again, as
                // an operator rebuilds paused engines) starts it again; the same group joins it.
                lab.reRegisterAll();
            }

            // Healthy again, the same loader process updates with the group.
            Files.delete(flaky);
            long g = lab.activeGeneration().getGeneration();
            LabCase.requireUpdated(lab, g, ledger);
            return String.join("; ", seen)
                    + "; generation "
                    + g
                    + " not corrupt; reader healthy again, the group updated to it, every byte"
                    + " verified";
        } finally {
            Files.deleteIfExists(flaky);
        }
    }

    private static String firstLine(String s) {
        String one = String.valueOf(s).lines().findFirst().orElse("");
        return one.length() > 200 ? one.substring(0, 200) + "..." : one;
    }
}
