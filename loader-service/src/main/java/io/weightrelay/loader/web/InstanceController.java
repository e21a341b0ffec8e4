package io.weightrelay.loader.web;

import io.weightrelay.api.loader.model.*;
import io.weightrelay.api.loader.server.InstanceApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 7 implements them. */
@RestController
class InstanceController implements InstanceApi {

    @Override
    public ResponseEntity<InstanceStatus> getInstance() {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getInstance lands with issue 7");
    }

    @Override
    public ResponseEntity<InstanceStatus> registerInstance(
            InstanceRegistration instanceRegistration) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("registerInstance lands with issue 7");
    }

    @Override
    public ResponseEntity<Void> teardownInstance() {
        throw CommonProblems.NOT_IMPLEMENTED.exception("teardownInstance lands with issue 7");
    }
}
