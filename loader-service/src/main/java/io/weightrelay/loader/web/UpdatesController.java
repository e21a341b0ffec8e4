package io.weightrelay.loader.web;

import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.loader.model.DeclineUpdateRequest;
import io.weightrelay.api.loader.model.StartUpdateRequest;
import io.weightrelay.api.loader.model.TransportBytes;
import io.weightrelay.api.loader.model.UpdateInstall;
import io.weightrelay.api.loader.model.UpdateOutcome;
import io.weightrelay.api.loader.model.UpdateProgress;
import io.weightrelay.api.loader.server.UpdatesApi;
import io.weightrelay.loader.update.UpdateCoordinator;
import io.weightrelay.loader.update.UpdateProblems;
import io.weightrelay.loader.update.UpdateRun;
import java.time.Duration;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/**
 * The engine starts an update (drained, or serving when it installs on request), follows it, asks
 * to install once it is fetched (or declines it), and follows it to its outcome.
 */
@RestController
record UpdatesController(UpdateCoordinator coordinator) implements UpdatesApi {

    @Override
    public ResponseEntity<UpdateProgress> startUpdate(StartUpdateRequest request) {
        int seconds = request.getTimeoutSeconds() == null ? 300 : request.getTimeoutSeconds();
        Duration timeout = Duration.ofSeconds(seconds);
        UpdateRun run =
                request.getInstall() == UpdateInstall.ON_REQUEST
                        ? coordinator.start(request.getGeneration(), timeout, true)
                        : coordinator.start(request.getGeneration(), timeout);
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(progress(run.snapshot()));
    }

    @Override
    public ResponseEntity<UpdateProgress> installUpdate(String updateId) {
        UpdateRun run = coordinator.install(updateId);
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(progress(run.snapshot()));
    }

    @Override
    public ResponseEntity<UpdateProgress> declineUpdate(
            String updateId, DeclineUpdateRequest request) {
        UpdateRun run = coordinator.decline(updateId, request == null ? null : request.getReason());
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(progress(run.snapshot()));
    }

    @Override
    public ResponseEntity<UpdateProgress> getCurrentUpdate() {
        UpdateRun run =
                coordinator
                        .current()
                        .orElseThrow(
                                () ->
                                        UpdateProblems.UPDATE_NOT_FOUND.exception(
                                                "no update has run yet"));
        return ResponseEntity.ok(progress(run.snapshot()));
    }

    @Override
    public ResponseEntity<UpdateProgress> getUpdate(String updateId, Integer waitMs) {
        UpdateRun run =
                coordinator
                        .find(updateId)
                        .orElseThrow(
                                () ->
                                        UpdateProblems.UPDATE_NOT_FOUND.exception(
                                                "no update " + updateId));
        if (waitMs == null || waitMs <= 0) {
            return ResponseEntity.ok(progress(run.snapshot()));
        }
        try {
            return ResponseEntity.ok(progress(run.awaitOutcome(Duration.ofMillis(waitMs))));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return ResponseEntity.ok(progress(run.snapshot()));
        }
    }

    static UpdateProgress progress(UpdateRun.Snapshot s) {
        UpdateProgress out =
                new UpdateProgress(
                        s.id(),
                        s.generation(),
                        UpdatePhase.fromValue(s.phase().name()),
                        UpdateOutcome.fromValue(s.outcome().name()),
                        s.bytesDone(),
                        s.bytesTotal());
        out.previousGeneration(s.previousGeneration())
                .failingPeer(s.failingPeer())
                .error(s.error())
                .durations(
                        new PhaseDurations()
                                .prepareMs(s.durationsMs().get(UpdateRun.Phase.PREPARING))
                                .applyMs(s.durationsMs().get(UpdateRun.Phase.APPLYING))
                                .postApplyMs(s.durationsMs().get(UpdateRun.Phase.POST_APPLYING))
                                .fetchMs(s.split().fetchMs())
                                .installMs(s.split().installMs())
                                .pauseMs(s.split().pauseMs()));
        if (s.counts() != null) {
            out.bytesRead(s.counts().bytesRead())
                    .bytesPushed(s.counts().bytesPushed())
                    .bytesFannedOut(s.counts().bytesFannedOut())
                    .bytesReceived(s.counts().bytesReceived());
            if (s.counts().checksums() != null) {
                out.getDurations().verifyMs(s.counts().checksumNanos() / 1_000_000);
            }
            if (s.counts().transport() != null) {
                out.transport(
                        new TransportBytes(
                                s.counts().transport().localRead(),
                                s.counts().transport().localWritten(),
                                s.counts().transport().tcpRead(),
                                s.counts().transport().tcpWritten()));
            }
        }
        return out;
    }
}
