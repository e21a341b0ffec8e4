package io.weightrelay.control.assignment;

import io.weightrelay.api.control.model.AssignmentRequest;
import io.weightrelay.api.control.model.PublisherAssignment;
import io.weightrelay.api.control.server.AssignmentsApi;
import io.weightrelay.control.generation.ManifestMapper;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

@RestController
record AssignmentsController(AssignmentService assignments) implements AssignmentsApi {

    @Override
    public ResponseEntity<PublisherAssignment> computeAssignment(AssignmentRequest request) {
        return ResponseEntity.ok(
                assignments.assignment(
                        ManifestMapper.toReshard(request.getManifest()),
                        ManifestMapper.trainerTopology(request.getTrainerTopology())));
    }
}
