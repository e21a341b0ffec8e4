package io.weightrelay.lab.cluster;

import io.weightrelay.api.control.client.CheckpointsApi;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.PlansApi;
import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.UpdatesApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.CheckpointReport;
import io.weightrelay.api.control.client.model.CheckpointRequest;
import io.weightrelay.api.control.client.model.CheckpointStatus;
import io.weightrelay.api.control.client.model.GcReport;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.Loader;
import io.weightrelay.api.control.client.model.RestoreRequest;
import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.reshard.plan.Slice;
import java.nio.file.Path;
import java.time.Duration;

/**
 * What the lab asks control-api as an operator (operator token) about its one model: generations,
 * sessions, plan slices, loaders, garbage collection, checkpoints. Everything goes to every
 * control-api instance with failover, but checkpoints, which go to the first instance alone.
 */
final class LabControlPlane {

    private final String model;
    private final GenerationsApi operator;
    private final ApiClient first;

    /**
     * @param all control-api's every instance, failed over
     * @param first its first instance alone
     */
    LabControlPlane(String model, ApiClient all, ApiClient first) {
        this.model = model;
        this.operator = new GenerationsApi(all);
        this.first = first;
    }

    GenerationState awaitGenerationState(long generation, GenerationState state, Duration wait)
            throws InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            GenerationState now = operator.getGeneration(model, generation).getState();
            if (now == state || System.nanoTime() > deadline) {
                return now;
            }
            Thread.sleep(100);
        }
    }

    GcReport collectGarbage() {
        return operator.collectGarbage(model);
    }

    Generation activeGeneration() {
        return operator.getActiveGeneration(model);
    }

    Generation generation(long generation) {
        return operator.getGeneration(model, generation);
    }

    UpdateSession session(long generation, String group) {
        return new UpdatesApi(operator.getApiClient()).getUpdateSession(model, generation, group);
    }

    Slice slice(String planId, String instance) {
        byte[] body =
                new PlansApi(operator.getApiClient())
                        .getPlanSliceWithResponseSpec(planId, instance)
                        .toEntity(byte[].class)
                        .getBody();
        return Slice.decode(body);
    }

    Loader loader(String id) {
        return new RegistryApi(operator.getApiClient()).getLoader(id);
    }

    void deregisterLoader(String id) {
        new RegistryApi(operator.getApiClient()).deregisterLoader(id);
    }

    CheckpointReport checkpoint(long generation, Path directory) {
        return checkpoints()
                .saveCheckpoint(
                        model, generation, new CheckpointRequest().directory(directory.toString()));
    }

    Generation restore(Path directory) {
        return checkpoints()
                .restoreCheckpoint(model, new RestoreRequest().directory(directory.toString()));
    }

    CheckpointStatus checkpointStatus(long generation) {
        return checkpoints().getCheckpointStatus(model, generation);
    }

    private CheckpointsApi checkpoints() {
        return new CheckpointsApi(first);
    }
}
