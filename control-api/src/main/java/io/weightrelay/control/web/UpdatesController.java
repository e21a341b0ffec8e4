package io.weightrelay.control.web;

import io.weightrelay.api.control.model.*;
import io.weightrelay.api.control.server.UpdatesApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 5 implements them. */
@RestController
class UpdatesController implements UpdatesApi {

    @Override
    public ResponseEntity<BarrierStatus> awaitBarrier(
            String model, Long generation, String group, BarrierName barrier, Integer waitSeconds) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("awaitBarrier lands with issue 5");
    }

    @Override
    public ResponseEntity<UpdateSession> getUpdateSession(
            String model, Long generation, String group) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getUpdateSession lands with issue 5");
    }

    @Override
    public ResponseEntity<UpdateSession> reportUpdatePhase(
            String model, Long generation, String group, PhaseReport phaseReport) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("reportUpdatePhase lands with issue 5");
    }

    @Override
    public ResponseEntity<UpdateSession> startUpdateSession(
            String model,
            Long generation,
            String group,
            UpdateSessionRequest updateSessionRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("startUpdateSession lands with issue 5");
    }
}
