package io.weightrelay.publisher.publish;

import io.weightrelay.api.publisher.model.PublishBatchRequest;
import io.weightrelay.api.publisher.model.PublishBatchResult;
import io.weightrelay.api.publisher.model.PublishStatus;
import io.weightrelay.api.publisher.server.PublishApi;
import io.weightrelay.reshard.manifest.GenerationId;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** Batch hand-over, finish and status of a generation on this node. */
@RestController
record PublishController(Publisher publisher) implements PublishApi {

    @Override
    public ResponseEntity<PublishBatchResult> publishBatch(
            String model, Long generation, PublishBatchRequest request) {
        return ResponseEntity.ok(
                publisher.publishBatch(new GenerationId(model, generation), request));
    }

    @Override
    public ResponseEntity<PublishStatus> openPublish(String model, Long generation) {
        return ResponseEntity.ok(publisher.open(new GenerationId(model, generation)));
    }

    @Override
    public ResponseEntity<PublishStatus> finishPublish(String model, Long generation) {
        return ResponseEntity.ok(publisher.finish(new GenerationId(model, generation)));
    }

    @Override
    public ResponseEntity<PublishStatus> getPublishStatus(String model, Long generation) {
        return ResponseEntity.ok(publisher.status(new GenerationId(model, generation)));
    }
}
