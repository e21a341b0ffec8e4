package io.weightrelay.control.update;

import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SentDigests;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.springframework.stereotype.Service;

/**
 * A loader's report of its phase: the range checksums and sent digests it carries, checked and
 * encoded as the step script stores them, one step, and the step's refusals (no epoch, fenced, not
 * a participant, out of order, ended) as the problems the contract names.
 */
@Service
public class PhaseReports {

    private final SessionSteps steps;
    private final SessionReads reads;

    PhaseReports(SessionSteps steps, SessionReads reads) {
        this.steps = steps;
        this.reads = reads;
    }

    /** Records {@code report} and answers the session as it left it (untouched). */
    public UpdateSession report(SessionKey sessionKey, PhaseReport report) {
        String checksums = "";
        if (report.getChecksums() != null && report.getChecksums().length > 0) {
            try {
                RangeChecksums.decode(report.getChecksums());
            } catch (CodecException e) {
                throw CommonProblems.INVALID_REQUEST
                        .exception(
                                "the range checksums of "
                                        + report.getInstance()
                                        + " cannot be read: "
                                        + e.getMessage())
                        .with("instance", report.getInstance());
            }
            checksums = Base64.getEncoder().encodeToString(report.getChecksums());
        }
        List<String> sent = new ArrayList<>();
        if (report.getPhase() == ReportedPhase.SENT && report.getSent() != null) {
            for (SentDigests to : report.getSent()) {
                sent.add(to.getInstance());
                sent.add(Base64.getEncoder().encodeToString(to.getDigests()));
            }
        }
        if (report.getPhase() == ReportedPhase.PREPARED
                && Boolean.TRUE.equals(report.getServesThroughFetch())) {
            // update-step.lua takes it where SENT's digests go.
            sent.add("1");
        }
        if (report.getPhase() == ReportedPhase.POST_APPLIED && report.getDurations() != null) {
            // update-step.lua takes them where SENT's digests go: fetch, install, pause.
            sent.add(count(report.getDurations().getFetchMs()));
            sent.add(count(report.getDurations().getInstallMs()));
            sent.add(count(report.getDurations().getPauseMs()));
        }
        Reply result =
                steps.step(
                        sessionKey,
                        report.getAttempt(),
                        sent,
                        report.getInstance(),
                        report.getEpoch() == null ? "" : String.valueOf(report.getEpoch()),
                        report.getPhase().getValue(),
                        count(report.getBytesRead()),
                        count(report.getBytesPushed()),
                        count(report.getBytesReceived()),
                        report.getFailingPeer() == null ? "" : report.getFailingPeer(),
                        report.getError() == null ? "" : report.getError(),
                        checksums);
        switch (result.code()) {
            case "ok" -> {
                steps.verifyWhenClaimed(sessionKey, result);
                return reads.read(sessionKey, false);
            }
            case "no-epoch" ->
                    throw UpdateProblems.EPOCH_REQUIRED
                            .exception(
                                    "the report of loader "
                                            + report.getInstance()
                                            + " carries no epoch; every report carries the epoch"
                                            + " its registration returned")
                            .with("instance", report.getInstance());
            case "not-participant" ->
                    throw UpdateProblems.NOT_A_PARTICIPANT
                            .exception(
                                    "loader "
                                            + report.getInstance()
                                            + " is not a participant of this session")
                            .with("instance", report.getInstance());
            case "fenced" -> throw fenced(report, result);
            case "stale-attempt" ->
                    throw UpdateProblems.SESSION_CLOSED
                            .exception(
                                    "the report of loader "
                                            + report.getInstance()
                                            + " is for attempt "
                                            + result.item(1)
                                            + " of the session of group "
                                            + sessionKey.group()
                                            + ", which ended; the session is on attempt "
                                            + result.item(2)
                                            + " now ("
                                            + result.item(3)
                                            + "), and a report of an earlier attempt is never"
                                            + " applied to it")
                            .with("instance", report.getInstance())
                            .with("attempt", Integer.parseInt(result.item(1)))
                            .with("currentAttempt", Integer.parseInt(result.item(2)))
                            .with("state", result.item(3));
            case "closed" ->
                    throw UpdateProblems.SESSION_CLOSED
                            .exception("the session already ended in state " + result.item(1))
                            .with("state", result.item(1));
            case "out-of-order" ->
                    throw UpdateProblems.PHASE_OUT_OF_ORDER
                            .exception(
                                    report.getPhase().getValue()
                                            + " cannot be reported while the session is "
                                            + result.item(1)
                                            + " and the loader is "
                                            + result.item(2))
                            .with("state", result.item(1));
            case "not-found" -> throw SessionReads.notFound(sessionKey);
            default -> throw result.unexpected();
        }
    }

    private static String count(Long value) {
        return value == null ? "" : String.valueOf(value);
    }

    private static RuntimeException fenced(PhaseReport report, Reply result) {
        String reason = result.item(1);
        String other = result.item(2);
        String loader = "loader " + report.getInstance();
        String detail =
                switch (reason) {
                    case "stale" ->
                            "is an earlier registration of "
                                    + loader
                                    + ", which is registered with epoch "
                                    + other
                                    + " now";
                    case "foreign" ->
                            "was never issued to "
                                    + loader
                                    + " (registered with epoch "
                                    + other
                                    + "): a report for another loader, or a made-up epoch";
                    case "unregistered" -> "names " + loader + ", which is not registered";
                    case "restarted" ->
                            "is not the one "
                                    + loader
                                    + " joined this session with (epoch "
                                    + other
                                    + "); the session fails, the earlier life's part is lost";
                    default -> "is refused (" + reason + ")";
                };
        RelayException problem =
                UpdateProblems.EPOCH_FENCED
                        .exception("report epoch " + report.getEpoch() + " " + detail)
                        .with("epoch", report.getEpoch())
                        .with("reason", reason)
                        .with("instance", report.getInstance());
        if (!other.isEmpty()) {
            problem.with(
                    "restarted".equals(reason) ? "joinedEpoch" : "registeredEpoch",
                    Long.parseLong(other));
        }
        return problem;
    }
}
