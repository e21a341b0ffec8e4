package io.weightrelay.loader.web;

import io.weightrelay.api.loader.model.*;
import io.weightrelay.api.loader.server.UpdatesApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 7 implements them. */
@RestController
class UpdatesController implements UpdatesApi {

    @Override
    public ResponseEntity<UpdateProgress> getCurrentUpdate() {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getCurrentUpdate lands with issue 7");
    }

    @Override
    public ResponseEntity<UpdateProgress> getUpdate(String updateId) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getUpdate lands with issue 7");
    }

    @Override
    public ResponseEntity<UpdateProgress> startUpdate(StartUpdateRequest startUpdateRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("startUpdate lands with issue 7");
    }
}
