package io.weightrelay.control.checkpoint;

import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.CheckpointRequest;
import io.weightrelay.api.control.model.CheckpointStatus;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.RestoreRequest;
import io.weightrelay.api.control.server.CheckpointsApi;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

@RestController
class CheckpointsController implements CheckpointsApi {

    private final CheckpointSave saves;
    private final CheckpointRestore restores;
    private final CheckpointRecords records;

    CheckpointsController(
            CheckpointSave saves, CheckpointRestore restores, CheckpointRecords records) {
        this.saves = saves;
        this.restores = restores;
        this.records = records;
    }

    @Override
    public ResponseEntity<CheckpointReport> saveCheckpoint(
            String model, Long generation, CheckpointRequest request) {
        return ResponseEntity.ok(saves.save(model, generation, request.getDirectory()));
    }

    @Override
    public ResponseEntity<CheckpointStatus> getCheckpointStatus(String model, Long generation) {
        return ResponseEntity.ok(records.status(model, generation));
    }

    @Override
    public ResponseEntity<Generation> restoreCheckpoint(String model, RestoreRequest request) {
        return ResponseEntity.ok(
                restores.restore(model, request.getGeneration(), request.getDirectory()));
    }
}
