package io.weightrelay.control.update;

import io.weightrelay.api.control.model.BarrierName;
import io.weightrelay.api.control.model.BarrierStatus;
import io.weightrelay.api.control.model.LandedDigests;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.UpdatePreparation;
import io.weightrelay.api.control.model.UpdatePreparationRequest;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.api.control.server.UpdatesApi;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.service.security.Caller;
import java.time.Duration;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

@RestController
record UpdatesController(
        UpdateService updates, PhaseReports reports, Barriers barriers, SessionReads sessions)
        implements UpdatesApi {

    @Override
    public ResponseEntity<UpdateSession> startUpdateSession(
            String model, Long generation, String group, UpdateSessionRequest request) {
        return ResponseEntity.ok(
                updates.start(new SessionKey(new GenerationId(model, generation), group), request));
    }

    @Override
    public ResponseEntity<UpdatePreparation> prepareUpdate(
            String model, Long generation, String group, UpdatePreparationRequest request) {
        // The lease is taken for the instance named: a token bound to another one is refused.
        Caller.requireMayActFor("instance", request.getInstance());
        return ResponseEntity.ok(
                updates.prepare(
                        new SessionKey(new GenerationId(model, generation), group), request));
    }

    @Override
    public ResponseEntity<UpdateSession> getUpdateSession(
            String model, Long generation, String group) {
        return ResponseEntity.ok(
                sessions.get(new SessionKey(new GenerationId(model, generation), group)));
    }

    @Override
    public ResponseEntity<UpdateSession> reportUpdatePhase(
            String model, Long generation, String group, PhaseReport report) {
        // A loader token bound to an instance reports for that instance only.
        Caller.requireMayActFor("instance", report.getInstance());
        return ResponseEntity.ok(
                reports.report(new SessionKey(new GenerationId(model, generation), group), report));
    }

    @Override
    public ResponseEntity<LandedDigests> getLandedDigests(
            String model, Long generation, String group, String instance) {
        return ResponseEntity.ok(
                sessions.landed(
                        new SessionKey(new GenerationId(model, generation), group), instance));
    }

    @Override
    public ResponseEntity<BarrierStatus> awaitBarrier(
            String model, Long generation, String group, BarrierName barrier, Integer waitSeconds) {
        Duration wait = Duration.ofSeconds(waitSeconds == null ? 30 : waitSeconds);
        return ResponseEntity.ok(
                barriers.awaitBarrier(
                        new SessionKey(new GenerationId(model, generation), group), barrier, wait));
    }

    @Override
    public ResponseEntity<BarrierStatus> arriveAtBarrier(
            String model,
            Long generation,
            String group,
            BarrierName barrier,
            PhaseReport report,
            Integer waitSeconds) {
        // A loader token bound to an instance reports for that instance only.
        Caller.requireMayActFor("instance", report.getInstance());
        Duration wait = Duration.ofSeconds(waitSeconds == null ? 30 : waitSeconds);
        return ResponseEntity.ok(
                barriers.arrive(
                        new SessionKey(new GenerationId(model, generation), group),
                        barrier,
                        report,
                        wait));
    }
}
