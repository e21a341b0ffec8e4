package io.weightrelay.publisher.web;

import io.weightrelay.api.publisher.model.*;
import io.weightrelay.api.publisher.server.PublishApi;
import io.weightrelay.service.problem.CommonProblems;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Answers 501 problem+json for every operation until issue 6 implements them. */
@RestController
class PublishController implements PublishApi {

    @Override
    public ResponseEntity<PublishStatus> finishPublish(String model, Long generation) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("finishPublish lands with issue 6");
    }

    @Override
    public ResponseEntity<PublishStatus> getPublishStatus(String model, Long generation) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("getPublishStatus lands with issue 6");
    }

    @Override
    public ResponseEntity<PublishBatchResult> publishBatch(
            String model, Long generation, PublishBatchRequest publishBatchRequest) {
        throw CommonProblems.NOT_IMPLEMENTED.exception("publishBatch lands with issue 6");
    }
}
