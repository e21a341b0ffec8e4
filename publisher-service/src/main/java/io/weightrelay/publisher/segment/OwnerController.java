package io.weightrelay.publisher.segment;

import io.weightrelay.api.publisher.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.model.OwnerCheckpointResult;
import io.weightrelay.api.publisher.model.SegmentInfo;
import io.weightrelay.api.publisher.model.TransportCounters;
import io.weightrelay.api.publisher.server.OwnerApi;
import io.weightrelay.dataplane.Counters;
import io.weightrelay.publisher.checkpoint.OwnerCheckpoints;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** The segment, its transport counters, and the owner's checkpoint duties. */
@RestController
record OwnerController(SegmentOwner owner, OwnerCheckpoints checkpoints) implements OwnerApi {

    @Override
    public ResponseEntity<SegmentInfo> getSegmentInfo() {
        Counters c = owner.counters();
        return ResponseEntity.ok(
                new SegmentInfo(
                                owner.segmentName(),
                                owner.node(),
                                owner.size(),
                                owner.size() - owner.freeBytes())
                        .endpoint(owner.endpoint())
                        .transport(
                                new TransportCounters(
                                        c.localRead(),
                                        c.localWritten(),
                                        c.tcpRead(),
                                        c.tcpWritten())));
    }

    @Override
    public ResponseEntity<OwnerCheckpointResult> saveOwnedObjects(OwnerCheckpointRequest request) {
        return ResponseEntity.ok(checkpoints.save(request));
    }

    @Override
    public ResponseEntity<OwnerCheckpointResult> restoreOwnedObjects(
            OwnerCheckpointRequest request) {
        return ResponseEntity.ok(checkpoints.restore(request));
    }
}
