package io.weightrelay.loader.pipeline;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Slice;
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
 * @param slice this loader's slice of the rollout group's routing plan
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
        Slice slice,
        BufferDirectory directory,
        List<Worker> registered) {
    public PrepareRequest {
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(instance, "instance");
        Objects.requireNonNull(manifest, "manifest");
        Objects.requireNonNull(slice, "slice");
        Objects.requireNonNull(directory, "directory");
        workers = List.copyOf(workers);
        registered = List.copyOf(registered);
    }

    /** The generation this prepare is for. */
    public GenerationId id() {
        return new GenerationId(model, generation);
    }
}
