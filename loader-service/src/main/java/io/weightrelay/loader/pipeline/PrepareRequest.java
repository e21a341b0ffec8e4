package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import java.util.List;
import java.util.Objects;

/**
 * Everything prepare needs, fetched and decoded by the caller.
 *
 * @param model model name
 * @param generation the generation to load
 * @param epoch the instance's registration epoch
 * @param instance this loader's instance id
 * @param workers this instance's worker ids, as the engine registered them
 * @param manifest the generation's source manifest (its digest must be the plan's source digest)
 * @param plan the routing plan of the rollout group
 * @param directory every worker's buffers in the group
 * @param registered this instance's workers as reshard sees them, for {@link
 *     io.weightrelay.reshard.plan.SliceValidator}
 */
public record PrepareRequest(
        String model,
        long generation,
        long epoch,
        String instance,
        List<String> workers,
        SourceManifest manifest,
        Plan plan,
        BufferDirectory directory,
        List<Worker> registered) {
    public PrepareRequest {
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(instance, "instance");
        Objects.requireNonNull(manifest, "manifest");
        Objects.requireNonNull(plan, "plan");
        Objects.requireNonNull(directory, "directory");
        workers = List.copyOf(workers);
        registered = List.copyOf(registered);
    }
}
