package io.weightrelay.loader.instance;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.InstanceSpan;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.model.DirectInstall;
import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.dataplane.ForeignBuffer;
import io.weightrelay.loader.pipeline.BufferSpec;
import io.weightrelay.loader.pipeline.WorkerBuffers;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
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
 * @param staged its direct workers receive into segments of the loader's while the engine serves
 *     from {@linkplain io.weightrelay.loader.registration.ServingCopies serving copies}, written
 *     only at install; otherwise they receive in place, into the weights the engine serves from
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
        boolean paused,
        boolean staged) {

    public Instance {
        workers = List.copyOf(workers);
    }

    /** The workers that receive their shards in place or staged, not a safetensors image. */
    public List<String> directWorkerIds() {
        return workers.stream()
                .filter(w -> w.getMode() == ConsumeMode.DIRECT)
                .map(WorkerPlacement::getWorkerId)
                .toList();
    }

    /**
     * Whether an update's fetch writes bytes the engine serves from: in-place direct workers do, so
     * their engine must drain before the fetch and resumes only after a successful one.
     */
    public boolean fetchWritesServingWeights() {
        return !staged && !directWorkerIds().isEmpty();
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
            List<TargetFragment> fragments = new ArrayList<>();
            for (FragmentTemplate.Entry e : fragments(w)) {
                Integer t = index.get(e.tensor());
                if (t == null) {
                    throw new IllegalArgumentException(
                            "worker "
                                    + w.getWorkerId()
                                    + " holds tensor "
                                    + e.tensor()
                                    + " that the manifest does not have");
                }
                fragments.add(e.typed(manifest.tensors().get(t)));
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

    /**
     * A worker's fragments as it registered them, in its order: what its placement template holds
     * and, typed by the manifest, what the planner places.
     */
    public static List<FragmentTemplate.Entry> fragments(WorkerPlacement w) {
        if (w.getFragments() == null) {
            return List.of();
        }
        return w.getFragments().stream()
                .map(
                        f ->
                                new FragmentTemplate.Entry(
                                        f.getTensor(),
                                        longs(f.getOffset()),
                                        longs(f.getShape()),
                                        f.getBufferId(),
                                        f.getBufferOffset(),
                                        longs(f.getStrides())))
                .toList();
    }

    private static long[] longs(List<Long> values) {
        return values.stream().mapToLong(Long::longValue).toArray();
    }

    static WorkerBuffers buffersOf(WorkerPlacement w) {
        return new WorkerBuffers(
                w.getWorkerId(),
                w.getBuffers().stream()
                        .map(
                                b ->
                                        new BufferSpec(
                                                b.getBufferId(),
                                                b.getSegment(),
                                                b.getSize(),
                                                b.getTransferEngine() == null
                                                        ? null
                                                        : new ForeignBuffer(
                                                                b.getTransferEngine().getSegment(),
                                                                b.getTransferEngine()
                                                                        .getAddress())))
                        .toList());
    }

    /**
     * {@code r} as registered at {@code epoch}, its workers holding {@code generation} (null before
     * the first update), {@code paused} or not; staged when it asks for a staged direct install.
     */
    public static Instance registered(
            InstanceRegistration r, long epoch, Long generation, boolean paused) {
        return new Instance(
                r.getInstanceId(),
                r.getModel(),
                r.getGroup(),
                r.getNode(),
                r.getSpan(),
                epoch,
                r.getWorkers(),
                generation,
                paused,
                r.getDirectInstall() == DirectInstall.STAGED);
    }

    Instance withGeneration(long value) {
        return new Instance(
                instanceId, model, group, node, span, epoch, workers, value, paused, staged);
    }

    Instance asPaused() {
        return new Instance(
                instanceId, model, group, node, span, epoch, workers, generation, true, staged);
    }
}
