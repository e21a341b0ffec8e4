package io.weightrelay.publisher.web;

import io.weightrelay.api.publisher.model.*;
import io.weightrelay.api.publisher.server.OwnerApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 6 implements them. */
@RestController
class OwnerController implements OwnerApi {

    @Override
    public ResponseEntity<SegmentInfo> getSegmentInfo() {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getSegmentInfo lands with issue 6");
    }

    @Override
    public ResponseEntity<OwnerCheckpointResult> restoreOwnedObjects(
            OwnerCheckpointRequest ownerCheckpointRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("restoreOwnedObjects lands with issue 6");
    }

    @Override
    public ResponseEntity<OwnerCheckpointResult> saveOwnedObjects(
            OwnerCheckpointRequest ownerCheckpointRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("saveOwnedObjects lands with issue 6");
    }
}
