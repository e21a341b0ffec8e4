package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.control.model.BarrierStatus;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdatePhase;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/** Update sessions: barriers, failure states, phase timeouts and the barrier long-poll. */
class UpdateSessionTest extends ControlApiTestSupport {

    @Autowired MeterRegistry meters;

    private String base(String model, long generation, String group) {
        return "/api/v1/models/" + model + "/generations/" + generation + "/updates/" + group;
    }

    private UpdateSession start(
            String model, long generation, String group, int timeout, String... instances) {
        UpdateSessionRequest request = new UpdateSessionRequest(List.of(instances));
        request.setPhaseTimeoutSeconds(timeout);
        return ok(
                call("PUT", base(model, generation, group), LOADER, request), UpdateSession.class);
    }

    private HttpResponse<String> report(
            String model, long generation, String group, String instance, ReportedPhase phase) {
        PhaseReport report = new PhaseReport(instance, phase);
        report.setBytesRead(1000L);
        report.setBytesReceived(2000L);
        if (phase == ReportedPhase.FAILED) {
            report.setError("read of m/1/x@0 returned 12 of 4096 bytes");
            report.setFailingPeer("seg-t1");
        }
        return call("POST", base(model, generation, group) + "/reports", LOADER, report);
    }

    private BarrierStatus barrier(
            String model, long generation, String group, String name, int wait) {
        return ok(
                get(
                        base(model, generation, group)
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
        assertThat(start(model, g, "grp", 60, "a", "b").getState())
                .isEqualTo(SessionState.PREPARING);
        assertProblem(
                call(
                        "PUT",
                        base(model, g, "grp"),
                        LOADER,
                        new UpdateSessionRequest(List.of("a", "c"))),
                409,
                "session-conflict");

        CompletableFuture<BarrierStatus> waiting =
                CompletableFuture.supplyAsync(() -> barrier(model, g, "grp", "prepared", 20));
        ok(report(model, g, "grp", "a", ReportedPhase.PREPARED), UpdateSession.class);
        assertThat(barrier(model, g, "grp", "prepared", 0).getArrived()).isEqualTo(1);
        assertProblem(
                report(model, g, "grp", "a", ReportedPhase.APPLIED), 409, "phase-out-of-order");
        assertProblem(
                report(model, g, "grp", "z", ReportedPhase.PREPARED), 409, "not-a-participant");
        UpdateSession applying =
                ok(report(model, g, "grp", "b", ReportedPhase.PREPARED), UpdateSession.class);
        assertThat(applying.getState()).isEqualTo(SessionState.APPLYING);
        BarrierStatus prepared = waiting.get(20, TimeUnit.SECONDS);
        assertThat(prepared.getOpen()).isTrue();
        assertThat(prepared.getArrived()).isEqualTo(2);

        ok(report(model, g, "grp", "a", ReportedPhase.APPLIED), UpdateSession.class);
        ok(report(model, g, "grp", "b", ReportedPhase.APPLIED), UpdateSession.class);
        assertThat(barrier(model, g, "grp", "applied", 0).getOpen()).isTrue();
        ok(report(model, g, "grp", "a", ReportedPhase.POST_APPLIED), UpdateSession.class);
        UpdateSession done =
                ok(report(model, g, "grp", "b", ReportedPhase.POST_APPLIED), UpdateSession.class);
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
        ok(report(model, g, "grp", "a", ReportedPhase.PREPARED), UpdateSession.class);
        UpdateSession failed =
                ok(report(model, g, "grp", "b", ReportedPhase.FAILED), UpdateSession.class);
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
        ok(report(model, g, "grp", "a", ReportedPhase.PREPARED), UpdateSession.class);
        ok(report(model, g, "grp", "b", ReportedPhase.PREPARED), UpdateSession.class);
        ok(report(model, g, "grp", "a", ReportedPhase.APPLIED), UpdateSession.class);
        UpdateSession failed =
                ok(report(model, g, "grp", "b", ReportedPhase.FAILED), UpdateSession.class);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo("b");
    }

    @Test
    void aPhaseThatOutlivesItsTimeoutFailsNamingTheLaggard() {
        String model = newModel();
        long g = publish(model, 1);
        start(model, g, "grp", 1, "a", "b");
        ok(report(model, g, "grp", "a", ReportedPhase.PREPARED), UpdateSession.class);
        long started = System.nanoTime();
        BarrierStatus status = barrier(model, g, "grp", "prepared", 10);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(4000);
        assertThat(status.getFailed()).isTrue();
        assertThat(status.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(status.getFailedInstance()).isEqualTo("b");
        UpdateSession session = ok(get(base(model, g, "grp"), OPERATOR), UpdateSession.class);
        assertThat(session.getFailure()).contains("timed out");
    }

    @Test
    void reportsOfAnOlderLoaderEpochAreFencedAndPostApplyRecordsTheServedGeneration() {
        String model = newModel();
        long g = publish(model, 1);
        String instance = "inst-" + model;
        ok(
                call(
                        "PUT",
                        "/api/v1/loaders/" + instance,
                        LOADER,
                        compatLoader(model, "grp", "r0", 1)),
                Loader.class);
        Loader second =
                ok(
                        call(
                                "PUT",
                                "/api/v1/loaders/" + instance,
                                LOADER,
                                compatLoader(model, "grp", "r0", 1)),
                        Loader.class);
        start(model, g, "grp", 60, instance);
        PhaseReport stale = new PhaseReport(instance, ReportedPhase.PREPARED);
        stale.setEpoch(second.getEpoch() - 1);
        assertProblem(
                call("POST", base(model, g, "grp") + "/reports", LOADER, stale),
                409,
                "epoch-fenced");
        for (ReportedPhase phase :
                List.of(
                        ReportedPhase.PREPARED,
                        ReportedPhase.APPLIED,
                        ReportedPhase.POST_APPLIED)) {
            PhaseReport r = new PhaseReport(instance, phase);
            r.setEpoch(second.getEpoch());
            ok(call("POST", base(model, g, "grp") + "/reports", LOADER, r), UpdateSession.class);
        }
        assertThat(ok(get("/api/v1/loaders/" + instance, OPERATOR), Loader.class).getGeneration())
                .isEqualTo(g);
    }
}
