package io.weightrelay.control.update;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.control.model.BarrierStatus;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.StoredFragment;
import io.weightrelay.api.control.model.UpdatePhase;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.RangeChecksums;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import tools.jackson.databind.JsonNode;

/** Update sessions: barriers, failure states, phase timeouts and the barrier long-poll. */
class UpdateSessionTest extends ControlApiTestSupport {

    @Autowired MeterRegistry meters;

    /** The epoch each instance's latest registration returned. */
    private final Map<String, Long> epochs = new HashMap<>();

    private long registerLoader(String model, String group, String instance) {
        Loader loader = registerLoader(instance, compatLoader(model, group, "r0", 1));
        epochs.put(instance, loader.getEpoch());
        return loader.getEpoch();
    }

    private UpdateSession start(
            String model, long generation, String group, int timeout, String... instances) {
        for (String instance : instances) {
            registerLoader(model, group, instance);
        }
        UpdateSessionRequest request = new UpdateSessionRequest(List.of(instances));
        request.setPhaseTimeoutSeconds(timeout);
        return ok(
                call("PUT", sessionPath(model, generation, group), LOADER, request),
                UpdateSession.class);
    }

    private HttpResponse<String> report(
            String model, long generation, String group, String instance, ReportedPhase phase) {
        PhaseReport report = new PhaseReport(instance, phase);
        report.setEpoch(epochs.getOrDefault(instance, 1L));
        report.setBytesRead(1000L);
        report.setBytesReceived(2000L);
        if (phase == ReportedPhase.FAILED) {
            report.setError("read of m/1/x@0 returned 12 of 4096 bytes");
            report.setFailingPeer("seg-t1");
        }
        return call("POST", sessionPath(model, generation, group) + "/reports", LOADER, report);
    }

    /**
     * A report by {@code instance} of {@code phase} carrying {@code epoch} ({@code null}: none).
     */
    private static PhaseReport phaseReport(String instance, ReportedPhase phase, Long epoch) {
        PhaseReport report = new PhaseReport(instance, phase);
        report.setEpoch(epoch);
        return report;
    }

    /** Sends {@code report} as it is to the session of group {@code grp}. */
    private HttpResponse<String> send(String model, long g, PhaseReport report) {
        return call("POST", sessionPath(model, g, "grp") + "/reports", LOADER, report);
    }

    /** A report of group {@code grp} the session accepts, and the session after it. */
    private UpdateSession reported(String model, long g, String instance, ReportedPhase phase) {
        return ok(report(model, g, "grp", instance, phase), UpdateSession.class);
    }

    /** Joins (or starts) the session of group {@code grp} with {@code request}. */
    private UpdateSession join(String model, long g, UpdateSessionRequest request) {
        return ok(call("PUT", sessionPath(model, g, "grp"), LOADER, request), UpdateSession.class);
    }

    private BarrierStatus barrier(
            String model, long generation, String group, String name, int wait) {
        return ok(
                get(
                        sessionPath(model, generation, group)
                                + "/barriers/"
                                + name
                                + "?waitSeconds="
                                + wait,
                        LOADER),
                BarrierStatus.class);
    }

    @Test
    void allPreparedOpensApplyAndAllAppliedOpensPostApply() throws Exception {
        String model = newModel();
        long g = publish(model, 1);
        UpdateSession session = start(model, g, "grp", 60, "b", "a");
        assertThat(session.getState()).isEqualTo(SessionState.PREPARING);
        UpdateSessionRequest again = new UpdateSessionRequest(List.of("a", "b"));
        again.setPhaseTimeoutSeconds(60);
        assertThat(join(model, g, again).getState()).isEqualTo(SessionState.PREPARING);
        assertProblem(
                call(
                        "PUT",
                        sessionPath(model, g, "grp"),
                        LOADER,
                        new UpdateSessionRequest(List.of("a", "c"))),
                409,
                "session-conflict");

        CompletableFuture<BarrierStatus> waiting =
                CompletableFuture.supplyAsync(() -> barrier(model, g, "grp", "prepared", 20));
        reported(model, g, "a", ReportedPhase.PREPARED);
        assertThat(barrier(model, g, "grp", "prepared", 0).getArrived()).isEqualTo(1);
        assertProblem(
                report(model, g, "grp", "a", ReportedPhase.APPLIED), 409, "phase-out-of-order");
        assertProblem(
                report(model, g, "grp", "z", ReportedPhase.PREPARED), 409, "not-a-participant");
        UpdateSession applying = reported(model, g, "b", ReportedPhase.PREPARED);
        assertThat(applying.getState()).isEqualTo(SessionState.APPLYING);
        BarrierStatus prepared = waiting.get(20, TimeUnit.SECONDS);
        assertThat(prepared.getOpen()).isTrue();
        assertThat(prepared.getArrived()).isEqualTo(2);

        reported(model, g, "a", ReportedPhase.APPLIED);
        reported(model, g, "b", ReportedPhase.APPLIED);
        assertThat(barrier(model, g, "grp", "applied", 0).getOpen()).isTrue();
        reported(model, g, "a", ReportedPhase.POST_APPLIED);
        UpdateSession done = reported(model, g, "b", ReportedPhase.POST_APPLIED);
        assertThat(done.getState()).isEqualTo(SessionState.DONE);
        assertThat(done.getParticipants())
                .allSatisfy(
                        p -> {
                            assertThat(p.getPhase()).isEqualTo(UpdatePhase.DONE);
                            assertThat(p.getBytesRead()).isEqualTo(1000L);
                            assertThat(p.getBytesReceived()).isEqualTo(2000L);
                        });
        assertThat(done.getDurations().getPrepareMs()).isNotNull();
        assertThat(done.getDurations().getApplyMs()).isNotNull();
        assertThat(done.getDurations().getPostApplyMs()).isNotNull();
        for (String phase : List.of("prepare", "apply", "post-apply")) {
            assertThat(meters.timer("relay.updates.phase", "model", model, "phase", phase).count())
                    .as("phase duration metric of " + phase)
                    .isEqualTo(1);
        }
        assertProblem(report(model, g, "grp", "a", ReportedPhase.FAILED), 409, "session-closed");
    }

    @Test
    void failureBeforeApplyResumesTheOldGenerationAndNamesTheLoader() {
        String model = newModel();
        long g = publish(model, 1);
        start(model, g, "grp", 60, "a", "b");
        reported(model, g, "a", ReportedPhase.PREPARED);
        UpdateSession failed = reported(model, g, "b", ReportedPhase.FAILED);
        assertThat(failed.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(failed.getFailedInstance()).isEqualTo("b");
        assertThat(failed.getFailure()).contains("12 of 4096").contains("seg-t1");
        BarrierStatus status = barrier(model, g, "grp", "prepared", 5);
        assertThat(status.getFailed()).isTrue();
        assertThat(status.getOpen()).isFalse();
        assertThat(status.getFailedInstance()).isEqualTo("b");
    }

    @Test
    void failureAfterApplyBeganPausesForRebuild() {
        String model = newModel();
        long g = publish(model, 1);
        start(model, g, "grp", 60, "a", "b");
        reported(model, g, "a", ReportedPhase.PREPARED);
        reported(model, g, "b", ReportedPhase.PREPARED);
        reported(model, g, "a", ReportedPhase.APPLIED);
        UpdateSession failed = reported(model, g, "b", ReportedPhase.FAILED);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo("b");
    }

    @Test
    void aFailedSessionStartsAfreshOnlyOnceTheGroupWasRebuilt() {
        String model = newModel();
        long g = publish(model, 1);
        start(model, g, "grp", 60, "a", "b");
        reported(model, g, "a", ReportedPhase.PREPARED);
        reported(model, g, "b", ReportedPhase.PREPARED);
        reported(model, g, "a", ReportedPhase.APPLYING);
        reported(model, g, "b", ReportedPhase.FAILED);

        // the same lives joining again find the session as it ended
        UpdateSessionRequest again = new UpdateSessionRequest(List.of("a", "b"));
        UpdateSession same = join(model, g, again);
        assertThat(same.getState()).isEqualTo(SessionState.PAUSED_REBUILD);

        // rebuilt (registered again, new epochs), the group loads the same generation afresh
        UpdateSession fresh = start(model, g, "grp", 60, "a", "b");
        assertThat(fresh.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(fresh.getFailedInstance()).isNull();
        assertThat(fresh.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.PREPARING));
        reported(model, g, "a", ReportedPhase.PREPARED);
        UpdateSession prepared = reported(model, g, "b", ReportedPhase.PREPARED);
        assertThat(prepared.getState()).isEqualTo(SessionState.APPLYING);
    }

    /**
     * A group rebuilt after its session ended DONE (every engine registered again, as a lab proving
     * the active generation intact does) loads the same generation through fresh barriers: joining
     * the ended session, whose barriers are open, would let one loader push before its peer took
     * its notify baseline.
     */
    @Test
    void aFinishedSessionStartsAfreshOnlyOnceTheGroupWasRebuilt() {
        String model = newModel();
        long g = publish(model, 1);
        start(model, g, "grp", 60, "a", "b");
        for (ReportedPhase phase : EVERY_PHASE) {
            reported(model, g, "a", phase);
            reported(model, g, "b", phase);
        }

        // the same lives joining again find the session as it ended
        UpdateSession same = join(model, g, new UpdateSessionRequest(List.of("a", "b")));
        assertThat(same.getState()).isEqualTo(SessionState.DONE);

        UpdateSession fresh = start(model, g, "grp", 60, "a", "b");
        assertThat(fresh.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(barrier(model, g, "grp", "prepared", 0).getOpen()).isFalse();
        reported(model, g, "a", ReportedPhase.PREPARED);
        assertThat(barrier(model, g, "grp", "prepared", 0).getOpen())
                .as("b has not prepared: a must wait for it")
                .isFalse();
        UpdateSession applying = reported(model, g, "b", ReportedPhase.PREPARED);
        assertThat(applying.getState()).isEqualTo(SessionState.APPLYING);
    }

    @Test
    void aPhaseThatOutlivesItsTimeoutFailsNamingTheLaggard() {
        String model = newModel();
        long g = publish(model, 1);
        start(model, g, "grp", 1, "a", "b");
        reported(model, g, "a", ReportedPhase.PREPARED);
        long started = System.nanoTime();
        BarrierStatus status = barrier(model, g, "grp", "prepared", 10);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(4000);
        assertThat(status.getFailed()).isTrue();
        assertThat(status.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(status.getFailedInstance()).isEqualTo("b");
        UpdateSession session =
                ok(get(sessionPath(model, g, "grp"), OPERATOR), UpdateSession.class);
        assertThat(session.getFailure()).contains("timed out");
    }

    @Test
    void reportsOfAnOlderLoaderEpochAreFencedAndPostApplyRecordsTheServedGeneration() {
        String model = newModel();
        long g = publish(model, 1);
        String instance = "inst-" + model;
        registerLoader(instance, compatLoader(model, "grp", "r0", 1));
        Loader second = registerLoader(instance, compatLoader(model, "grp", "r0", 1));
        start(model, g, "grp", 60, instance);
        assertThat(epochs.get(instance)).isEqualTo(second.getEpoch() + 1);
        PhaseReport stale = phaseReport(instance, ReportedPhase.PREPARED, second.getEpoch());
        assertProblem(send(model, g, stale), 409, "epoch-fenced");
        for (ReportedPhase phase : EVERY_PHASE) {
            ok(
                    send(model, g, phaseReport(instance, phase, epochs.get(instance))),
                    UpdateSession.class);
        }
        assertThat(ok(get("/api/v1/loaders/" + instance, OPERATOR), Loader.class).getGeneration())
                .isEqualTo(g);
    }

    @Test
    void reportsWithoutAnEpochOrWithAnotherLoadersEpochAreRefusedNamingTheEpoch() throws Exception {
        String model = newModel();
        long g = publish(model, 1);
        String a = "fa-" + model;
        String b = "fb-" + model;
        start(model, g, "grp", 60, a, b);
        long epochA = epochs.get(a);
        long epochB = epochs.get(b);
        assertThat(epochA).isNotEqualTo(epochB);

        HttpResponse<String> missing = send(model, g, phaseReport(a, ReportedPhase.PREPARED, null));
        assertProblem(missing, 400, "epoch-required");
        assertThat(missing.body()).contains(a);

        // Loader a reports for b with its own epoch: foreign to b.
        HttpResponse<String> foreign =
                send(model, g, phaseReport(b, ReportedPhase.PREPARED, epochA));
        assertProblem(foreign, 409, "epoch-fenced");
        JsonNode problem = json.readTree(foreign.body());
        assertThat(problem.get("epoch").asLong()).isEqualTo(epochA);
        assertThat(problem.get("registeredEpoch").asLong()).isEqualTo(epochB);
        assertThat(problem.get("reason").asString()).isEqualTo("foreign");
        assertThat(problem.get("detail").asString()).contains("never issued to loader " + b);

        // A made-up epoch is foreign as well.
        PhaseReport madeUp = phaseReport(b, ReportedPhase.PREPARED, epochB + 1_000_000);
        assertProblem(send(model, g, madeUp), 409, "epoch-fenced");

        // Nothing of it moved the session: both still prepare.
        UpdateSession session =
                ok(get(sessionPath(model, g, "grp"), OPERATOR), UpdateSession.class);
        assertThat(session.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(session.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.PREPARING));
    }

    @Test
    void aLoaderReRegisteredAfterApplyBeganCannotReportForTheLifeThatJoined() {
        String model = newModel();
        long g = publish(model, 1);
        String a = "ra-" + model;
        String b = "rb-" + model;
        start(model, g, "grp", 60, a, b);
        reported(model, g, a, ReportedPhase.PREPARED);
        reported(model, g, b, ReportedPhase.PREPARED);
        long before = epochs.get(a);
        long after = registerLoader(model, "grp", a); // a restarted while applying
        assertThat(after).isGreaterThan(before);

        // Its previous life's report is stale ...
        HttpResponse<String> refused =
                send(model, g, phaseReport(a, ReportedPhase.APPLIED, before));
        assertProblem(refused, 409, "epoch-fenced");
        assertThat(json.readTree(refused.body()).get("reason").asString()).isEqualTo("stale");
        assertThat(json.readTree(refused.body()).get("epoch").asLong()).isEqualTo(before);

        // ... and its new life cannot claim what the old one applied: the group pauses.
        HttpResponse<String> restarted = report(model, g, "grp", a, ReportedPhase.APPLIED);
        assertProblem(restarted, 409, "epoch-fenced");
        assertThat(json.readTree(restarted.body()).get("reason").asString()).isEqualTo("restarted");
        assertThat(json.readTree(restarted.body()).get("joinedEpoch").asLong()).isEqualTo(before);
        UpdateSession session =
                ok(get(sessionPath(model, g, "grp"), OPERATOR), UpdateSession.class);
        assertThat(session.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(session.getFailedInstance()).isEqualTo(a);
        assertThat(session.getFailure()).contains("re-registered during the update");
    }

    /** Range checksums of one object that combine to {@code whole}: [0, split) and the rest. */
    private static List<RangeChecksums.Entry> tiles(
            String object, long size, long split, int whole) {
        int head = 0x5eed1234;
        int tail = whole ^ Crc32c.combine(head, 0, size - split);
        return List.of(
                new RangeChecksums.Entry(object, 0, split, head),
                new RangeChecksums.Entry(object, split, size - split, tail));
    }

    private HttpResponse<String> applied(
            String model, long g, String instance, List<RangeChecksums.Entry> entries) {
        PhaseReport r = phaseReport(instance, ReportedPhase.APPLIED, epochs.get(instance));
        r.setChecksums(new RangeChecksums(entries).encode());
        return send(model, g, r);
    }

    private List<List<RangeChecksums.Entry>> readByTwo(String model, long g, boolean corrupt) {
        List<RangeChecksums.Entry> first = new ArrayList<>();
        List<RangeChecksums.Entry> second = new ArrayList<>();
        int registered = Crc32c.parse("crc32c:0badf00d");
        for (StoredFragment f : fragments(model, g)) {
            String object = f.getKey().substring((model + "/" + g + "/").length());
            List<RangeChecksums.Entry> t =
                    tiles(object, f.getBytes(), f.getBytes() / 3, registered);
            first.add(t.get(0));
            second.add(t.get(1));
        }
        if (corrupt) {
            RangeChecksums.Entry e = second.get(0);
            second.set(0, new RangeChecksums.Entry(e.object(), e.offset(), e.length(), ~e.crc()));
        }
        return List.of(first, second);
    }

    @Test
    void theAppliedBarrierOpensOnlyOnceEveryObjectReadMatchesItsPublishedChecksum() {
        String model = newModel();
        long g = publish(model, 1);
        start(model, g, "grp", 60, "ca", "cb");
        reported(model, g, "ca", ReportedPhase.PREPARED);
        reported(model, g, "cb", ReportedPhase.PREPARED);
        List<List<RangeChecksums.Entry>> reads = readByTwo(model, g, false);
        UpdateSession one = ok(applied(model, g, "ca", reads.get(0)), UpdateSession.class);
        assertThat(one.getState()).isEqualTo(SessionState.APPLYING);
        UpdateSession both = ok(applied(model, g, "cb", reads.get(1)), UpdateSession.class);
        assertThat(both.getState()).isEqualTo(SessionState.POST_APPLYING);
        assertThat(both.getVerifiedObjects()).isEqualTo((long) reads.get(0).size());
        assertThat(both.getPartialObjects()).isZero();
        assertThat(both.getDurations().getVerifyMs()).isNotNull();
        assertThat(barrier(model, g, "grp", "applied", 0).getOpen()).isTrue();
    }

    @Test
    void oneRangeThatDoesNotMatchPausesTheGroupBeforePostApplyNamingObjectAndReaders() {
        String model = newModel();
        long served = publish(model, 1);
        long g = publish(model, 2);
        start(model, g, "grp", 60, "ca", "cb");
        reported(model, g, "ca", ReportedPhase.PREPARED);
        reported(model, g, "cb", ReportedPhase.PREPARED);
        List<List<RangeChecksums.Entry>> reads = readByTwo(model, g, true);
        String object = reads.get(1).get(0).object();
        ok(applied(model, g, "ca", reads.get(0)), UpdateSession.class);
        UpdateSession failed = ok(applied(model, g, "cb", reads.get(1)), UpdateSession.class);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo("ca,cb");
        assertThat(failed.getFailure())
                .contains("object " + object, "ca", "cb", "does not match its registered checksum");
        BarrierStatus applied = barrier(model, g, "grp", "applied", 0);
        assertThat(applied.getOpen()).isFalse();
        assertThat(applied.getFailed()).isTrue();
        assertThat(applied.getFailure()).contains(object);
        assertProblem(
                report(model, g, "grp", "ca", ReportedPhase.POST_APPLIED), 409, "session-closed");
        assertThat(
                        meters.counter(
                                        "relay.updates.failed",
                                        "model",
                                        model,
                                        "state",
                                        "PAUSED_REBUILD")
                                .count())
                .isEqualTo(1.0);
        // The generation is not served again; the one before it is active once more.
        Generation corrupt =
                ok(
                        get("/api/v1/models/" + model + "/generations/" + g, OPERATOR),
                        Generation.class);
        assertThat(corrupt.getCorruptObject()).isEqualTo(object);
        assertThat(corrupt.getState()).isEqualTo(GenerationState.RETIRED);
        Generation active =
                ok(
                        get("/api/v1/models/" + model + "/generations/active", OPERATOR),
                        Generation.class);
        assertThat(active.getGeneration()).isEqualTo(served);
        assertThat(active.getState()).isEqualTo(GenerationState.ACTIVE);
        assertThat(failed.getFailure()).contains("generation " + served + " is active again");
    }

    @Test
    void unreadableRangeChecksumsAreRefusedNamingTheLoader() {
        String model = newModel();
        long g = publish(model, 1);
        start(model, g, "grp", 60, "ca");
        reported(model, g, "ca", ReportedPhase.PREPARED);
        PhaseReport r = phaseReport("ca", ReportedPhase.APPLIED, epochs.get("ca"));
        r.setChecksums(new byte[] {1, 2, 3});
        HttpResponse<String> refused = send(model, g, r);
        assertProblem(refused, 400, "invalid-request");
        assertThat(refused.body()).contains("range checksums of ca");
    }
}
