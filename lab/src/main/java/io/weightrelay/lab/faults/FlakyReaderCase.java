package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.lab.cluster.LabCluster;
import java.util.ArrayList;
import java.util.List;

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

    private static final int READER = 0;

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        try (FaultFile flaky = FaultFile.onLoader(fault, READER, "flaky-reads-file")) {
            String reader = flaky.instance();
            List<String> seen = new ArrayList<>();
            for (String mode : List.of("fail", "wrong-bytes")) {
                FaultFile.Attempt attempt = flaky.update(mode);
                long g = attempt.generation();
                for (Engines.Ended e : attempt.ended()) {
                    check(!e.updated(), "a group update with a flaky reader: " + e.describe());
                }
                UpdateSession session = attempt.session();
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
                LabCase.requireStillActive(lab, g);
                seen.add(
                        mode
                                + ": "
                                + session.getState()
                                + " naming "
                                + reader
                                + " ("
                                + LabCase.firstLine(session.getFailure())
                                + ")");
                // The group's session of g ended: a new life of the group (registered again, as
                // an operator rebuilds paused engines) starts it again; the same group joins it.
                lab.reRegisterAll();
            }

            // Healthy again, the same loader process updates with the group.
            flaky.off();
            long g = lab.activeGeneration().getGeneration();
            LabCase.requireUpdated(lab, g, fault.ledger());
            return String.join("; ", seen)
                    + "; generation "
                    + g
                    + " not corrupt; reader healthy again, the group updated to it, every byte"
                    + " verified";
        }
    }
}
