package io.weightrelay.loader.instance;

import io.weightrelay.api.loader.model.ConsumeMode;
import io.weightrelay.api.loader.model.InstanceSpan;
import io.weightrelay.api.loader.model.TargetFragment;
import io.weightrelay.api.loader.model.WorkerPlacement;
import io.weightrelay.loader.pipeline.BufferSpec;
import io.weightrelay.loader.pipeline.WorkerBuffers;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.Worker;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The registered instance, immutable; a change produces a new value.
 *
 * @param span the rollout instance this loader serves one node of, or null when the engine instance
 *     is all on this node
 * @param epoch registration epoch from control-api; a re-registration starts a new one
 * @param generation the generation the workers hold, or null before the first update
 * @param paused true after a failure during apply: the instance must be rebuilt (re-registered)
 */
public record Instance(
        String instanceId,
        String model,
        String group,
        String node,
        InstanceSpan span,
        long epoch,
        List<WorkerPlacement> workers,
        Long generation,
        boolean paused) {

    public Instance {
        workers = List.copyOf(workers);
    }

    public List<String> workerIds() {
        return workers.stream().map(WorkerPlacement::getWorkerId).toList();
    }

    /** The workers' buffers as the pipeline sees them. */
    public List<WorkerBuffers> buffers() {
        return directoryInput(workers);
    }

    static List<WorkerBuffers> directoryInput(List<WorkerPlacement> workers) {
        return workers.stream().map(Instance::buffersOf).toList();
    }

    /**
     * The workers as the planner sees them (control-api builds the same from the registry): the
     * segment of the first buffer, fragments typed by the manifest.
     */
    public List<Worker> reshardWorkers(SourceManifest manifest) {
        Map<String, Integer> index = manifest.tensorIndex();
        List<Worker> out = new ArrayList<>();
        for (WorkerPlacement w : workers) {
            List<io.weightrelay.reshard.placement.TargetFragment> fragments = new ArrayList<>();
            if (w.getFragments() != null) {
                for (TargetFragment f : w.getFragments()) {
                    Integer t = index.get(f.getTensor());
                    if (t == null) {
                        throw new IllegalArgumentException(
                                "worker "
                                        + w.getWorkerId()
                                        + " holds tensor "
                                        + f.getTensor()
                                        + " that the manifest does not have");
                    }
                    TensorSpec spec = manifest.tensors().get(t);
                    fragments.add(
                            new io.weightrelay.reshard.placement.TargetFragment(
                                    f.getTensor(),
                                    spec.rolloutDtype(),
                                    spec.shape(),
                                    shape(f.getOffset()),
                                    shape(f.getShape()),
                                    f.getBufferId(),
                                    f.getBufferOffset(),
                                    shape(f.getStrides())));
                }
            }
            out.add(
                    new Worker(
                            w.getWorkerId(),
                            instanceId,
                            w.getNode(),
                            0,
                            1,
                            w.getMode() == ConsumeMode.COMPAT ? Mode.COMPAT : Mode.DIRECT,
                            w.getBuffers().get(0).getSegment(),
                            fragments));
        }
        return out;
    }

    private static Shape shape(List<Long> dims) {
        return Shape.of(dims.stream().mapToLong(Long::longValue).toArray());
    }

    static WorkerBuffers buffersOf(WorkerPlacement w) {
        return new WorkerBuffers(
                w.getWorkerId(),
                w.getBuffers().stream()
                        .map(b -> new BufferSpec(b.getBufferId(), b.getSegment(), b.getSize()))
                        .toList());
    }

    Instance withGeneration(long value) {
        return new Instance(instanceId, model, group, node, span, epoch, workers, value, paused);
    }

    Instance asPaused() {
        return new Instance(instanceId, model, group, node, span, epoch, workers, generation, true);
    }
}
