package io.weightrelay.control.web;

import io.weightrelay.api.control.model.*;
import io.weightrelay.api.control.server.CheckpointsApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 5 implements them. */
@RestController
class CheckpointsController implements CheckpointsApi {

    @Override
    public ResponseEntity<Generation> restoreCheckpoint(
            String model, RestoreRequest restoreRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("restoreCheckpoint lands with issue 5");
    }

    @Override
    public ResponseEntity<CheckpointReport> saveCheckpoint(
            String model, Long generation, CheckpointRequest checkpointRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("saveCheckpoint lands with issue 5");
    }
}
