package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.CheckpointRequest;
import io.weightrelay.api.control.model.CheckpointStatus;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.RestoreRequest;
import io.weightrelay.api.control.server.CheckpointsApi;
import io.weightrelay.reshard.manifest.GenerationId;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

@RestController
record CheckpointsController(Checkpoints checkpoints) implements CheckpointsApi {

    @Override
    public ResponseEntity<CheckpointReport> saveCheckpoint(
            String model, Long generation, CheckpointRequest request) {
        return ResponseEntity.ok(
                checkpoints.save(new GenerationId(model, generation), request.getDirectory()));
    }

    @Override
    public ResponseEntity<CheckpointStatus> getCheckpointStatus(String model, Long generation) {
        return ResponseEntity.ok(checkpoints.status(new GenerationId(model, generation)));
    }

    @Override
    public ResponseEntity<Generation> restoreCheckpoint(String model, RestoreRequest request) {
        return ResponseEntity.ok(
                checkpoints.restore(model, request.getGeneration(), request.getDirectory()));
    }
}
