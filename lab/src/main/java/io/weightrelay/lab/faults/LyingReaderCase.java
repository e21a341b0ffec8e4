package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;
import static io.weightrelay.lab.faults.LabCase.requireEnded;
import static io.weightrelay.lab.faults.LabCase.requireHolding;

import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.control.client.UpdatesApi;
import io.weightrelay.api.control.client.model.PhaseReport;
import io.weightrelay.api.control.client.model.ReportedPhase;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.plan.Slice;
import java.util.ArrayList;
import java.util.List;

/**
 * One reader lies about what it read: with its own loader token and epoch, the lab reports the
 * instance APPLIED with range checksums its bytes do not have (what a leaked token, bad memory or a
 * faulty NIC would report), while the loader itself is frozen (SIGSTOP) inside the apply, so its
 * own honest report comes too late to count. The stored bytes are as published. control-api reads
 * the disputed object back before it blames the generation: only the group's session fails, naming
 * the lying reader; none advances (every engine, its fetch having written nothing it serves from,
 * resumes its old generation: RESUMED_OLD, or PAUSED_REBUILD where its workers receive in place),
 * and the generation is neither marked corrupt nor taken from the active pointer. The suite then
 * registers every engine again (the group's session of that generation ended; only a new life of
 * the group starts it again) and loads that same generation, byte for byte: it stayed servable.
 */
final class LyingReaderCase {

    private LyingReaderCase() {}

    private static final String GROUP = "lab";

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        int index = 0;
        String liar = lab.engines().get(index).instance();
        UpdateOutcome failed = LabCase.failedFetchOutcome(lab);
        MidApply caught =
                MidApply.caught(
                        fault,
                        LoaderKilledMidApplyCase.PHASE_TIMEOUT,
                        "the apply of " + liar,
                        g -> MidApply.freezeLoader(lab, g, liar, lab.faults().loaderPid(index)));
        long g = caught.generation();
        int lies;
        try {
            lies = lie(lab, g, liar);
        } finally {
            MidApply.signal("CONT", lab.faults().loaderPid(index));
        }
        List<Engines.Ended> ended = caught.awaitNoneAdvancing(fault);
        requireEnded(ended, failed, liar, null);
        requireHolding(lab, caught.previous(), failed == UpdateOutcome.PAUSED_REBUILD, null);

        UpdateSession session = lab.session(g, GROUP);
        LabCase.requireSessionEnded(session, failed);
        check(
                liar.equals(session.getFailedInstance()),
                "the session names the lying reader "
                        + liar
                        + " alone: "
                        + session.getFailedInstance()
                        + " ("
                        + session.getFailure()
                        + ")");
        check(
                String.valueOf(session.getFailure()).contains("does not match the stored bytes"),
                "the failure says control-api found the stored bytes as published: "
                        + session.getFailure());
        LabCase.requireStillActive(lab, g);
        return liar
                + " frozen "
                + caught.how()
                + " (attempt "
                + caught.attempt()
                + ") and reported APPLIED with "
                + lies
                + " wrong range checksums; session "
                + session.getState()
                + " naming "
                + session.getFailedInstance()
                + " ("
                + session.getFailure()
                + "); generation "
                + g
                + " stays active, not corrupt";
    }

    /**
     * Reports {@code liar} APPLIED in the session of {@code generation}, as its own token and epoch
     * allow, with a wrong CRC32C for every range its slice of the plan has it read; returns how
     * many.
     */
    private static int lie(LabCluster lab, long generation, String liar) {
        UpdateSession session = lab.session(generation, GROUP);
        Slice slice = lab.slice(session.getPlanId(), liar);
        List<RangeChecksums.Entry> entries = new ArrayList<>();
        for (int b = 0; b < slice.batchCount(); b++) {
            for (Slice.ReadOp read : slice.batch(b).reads()) {
                for (int r = 0; r < read.rangeStarts().length; r++) {
                    entries.add(
                            new RangeChecksums.Entry(
                                    read.fragment(),
                                    read.rangeStarts()[r],
                                    read.rangeLengths()[r],
                                    0x1badc0de ^ r));
                }
            }
        }
        check(!entries.isEmpty(), liar + " reads nothing in plan " + session.getPlanId());
        PhaseReport report =
                new PhaseReport()
                        .instance(liar)
                        .phase(ReportedPhase.APPLIED)
                        .epoch(lab.loader(liar).getEpoch())
                        .checksums(new RangeChecksums(entries).encode());
        Endpoint as = Endpoint.of(lab.controlUrls(), lab.loaderToken(liar));
        new UpdatesApi(RelayClients.of(as).control())
                .reportUpdatePhase(lab.manifest().model(), generation, GROUP, report);
        return entries.size();
    }
}
