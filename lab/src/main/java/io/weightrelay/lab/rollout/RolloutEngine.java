package io.weightrelay.lab.rollout;

import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.InstanceSpan;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.client.InstanceApi;
import io.weightrelay.api.loader.client.UpdatesApi;
import io.weightrelay.api.loader.client.invoker.ApiClient;
import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.api.loader.client.model.InstanceRegistration;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.StartUpdateRequest;
import io.weightrelay.api.loader.client.model.UpdateInstall;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * One simulated engine instance and the loader-service beside it. Not thread safe: one thread
 * drives one engine.
 */
public final class RolloutEngine {
    /** The longest long poll the loader's contract admits. */
    private static final int MAX_WAIT_MS = 10_000;

    private final String instance;
    private final InstanceApi instanceApi;
    private final UpdatesApi updatesApi;

    public RolloutEngine(String instance, String loaderUrl, String token) {
        this.instance = instance;
        Endpoint loader = Endpoint.of(loaderUrl, token);
        ApiClient client = RelayClients.of(loader).loader();
        this.instanceApi = new InstanceApi(client);
        this.updatesApi = new UpdatesApi(client);
    }

    public String instance() {
        return instance;
    }

    /**
     * The registration of this instance's workers: compat workers get one buffer holding the
     * safetensors image; direct workers one buffer per parameter shard, all in one segment per
     * worker (named after the worker).
     */
    public static List<WorkerPlacement> workers(
            TargetPlacement placement, String instance, SourceManifest manifest) {
        return workers(placement, instance, null, manifest);
    }

    /**
     * What a loader registers for worker {@code w} as rank {@code rank}: its id, node, NIC and
     * mode, and for a compat worker its one receive buffer, the safetensors image of {@code image}
     * bytes (a direct worker's fragments and buffers are added by the caller).
     */
    public static WorkerPlacement registration(Worker w, int rank, long image) {
        WorkerPlacement p =
                new WorkerPlacement()
                        .workerId(w.id())
                        .rank(rank)
                        .node(w.node())
                        .nic("nic" + w.nicFirst())
                        .mode(w.mode() == Mode.COMPAT ? ConsumeMode.COMPAT : ConsumeMode.DIRECT);
        if (w.mode() == Mode.COMPAT) {
            p.addBuffersItem(
                    new ReceiveBuffer()
                            .bufferId(Worker.COMPAT_BUFFER)
                            .segment(w.segment())
                            .size(image));
        }
        return p;
    }

    /**
     * As {@link #workers(TargetPlacement, String, SourceManifest)}, only the ranks on {@code node}
     * (null: on every node): what the loader of one node of an instance that spans nodes registers.
     * Ranks keep their number in the instance.
     */
    public static List<WorkerPlacement> workers(
            TargetPlacement placement, String instance, String node, SourceManifest manifest) {
        long image = SafetensorsLayout.of(manifest).imageBytes();
        List<WorkerPlacement> out = new ArrayList<>();
        int rank = 0;
        for (Worker w : placement.workers()) {
            if (!w.instance().equals(instance)) {
                continue;
            }
            if (node != null && !w.node().equals(node)) {
                rank++;
                continue;
            }
            WorkerPlacement p = registration(w, rank++, image);
            if (w.mode() != Mode.COMPAT) {
                Map<String, Long> sizes = new LinkedHashMap<>();
                for (io.weightrelay.reshard.placement.TargetFragment f : w.fragments()) {
                    sizes.merge(f.buffer(), Math.max(1, f.bufferEnd()), Math::max);
                    p.addFragmentsItem(
                            new TargetFragment()
                                    .tensor(f.tensor())
                                    .offset(list(f.offset()))
                                    .shape(list(f.shape()))
                                    .bufferId(f.buffer())
                                    .bufferOffset(f.bufferOffset())
                                    .strides(list(f.strides())));
                }
                sizes.forEach(
                        (id, size) ->
                                p.addBuffersItem(
                                        new ReceiveBuffer()
                                                .bufferId(id)
                                                .segment(w.segment())
                                                .size(size)));
            }
            out.add(p);
        }
        return out;
    }

    private static List<Long> list(Shape shape) {
        return Arrays.stream(shape.dims()).boxed().toList();
    }

    public InstanceStatus register(
            String model, String group, String node, List<WorkerPlacement> workers) {
        return register(model, group, node, null, workers);
    }

    /**
     * Registers the workers with this engine's loader; {@code span} names the instance this loader
     * serves one node of, or is null for an instance all on {@code node}.
     */
    public InstanceStatus register(
            String model,
            String group,
            String node,
            InstanceSpan span,
            List<WorkerPlacement> workers) {
        return register(model, group, node, span, workers, DirectInstall.IN_PLACE);
    }

    /**
     * As {@link #register(String, String, String, InstanceSpan, List)}, saying how the direct
     * workers take a new generation: in place, or staged beside the weights they serve from.
     */
    public InstanceStatus register(
            String model,
            String group,
            String node,
            InstanceSpan span,
            List<WorkerPlacement> workers,
            DirectInstall directInstall) {
        return instanceApi.registerInstance(
                new InstanceRegistration()
                        .instanceId(instance)
                        .model(model)
                        .group(group)
                        .node(node)
                        .span(span)
                        .directInstall(directInstall)
                        .workers(workers));
    }

    public InstanceStatus status() {
        return instanceApi.getInstance();
    }

    public void teardown() {
        instanceApi.teardownInstance();
    }

    /** Starts an update (the engine has drained); {@code generation} null means the active one. */
    public UpdateProgress start(Long generation, Duration timeout) {
        return updatesApi.startUpdate(
                new StartUpdateRequest()
                        .generation(generation)
                        .timeoutSeconds((int) Math.max(1, timeout.toSeconds())));
    }

    /**
     * Starts an update the engine serves through: it stops at {@code FETCHED} until {@link
     * #install}.
     */
    public UpdateProgress startServing(Long generation, Duration timeout) {
        return updatesApi.startUpdate(
                new StartUpdateRequest()
                        .generation(generation)
                        .timeoutSeconds((int) Math.max(1, timeout.toSeconds()))
                        .install(UpdateInstall.ON_REQUEST));
    }

    /** The engine drained: installs the fetched update. */
    public UpdateProgress install(String updateId) {
        return updatesApi.installUpdate(updateId);
    }

    /**
     * Follows an update installed on request until it is fetched, or has ended: long polls of
     * {@code poll}, which the loader answers as soon as the update waits at FETCHED for the engine
     * (a short poll only costs the loaders' cores requests while they move the bytes).
     */
    public UpdateProgress awaitFetched(String updateId, Duration poll) {
        int waitMs = (int) Math.max(1, Math.min(MAX_WAIT_MS, poll.toMillis()));
        while (true) {
            UpdateProgress p = updatesApi.getUpdate(updateId, waitMs);
            if (p.getOutcome() != UpdateOutcome.RUNNING || p.getPhase() == UpdatePhase.FETCHED) {
                return p;
            }
        }
    }

    /** Follows the update until it has an outcome. */
    public UpdateProgress await(String updateId, Duration poll) throws InterruptedException {
        return await(updateId, poll, p -> {});
    }

    /** Follows the update until it has an outcome, handing each answer to {@code each}. */
    public UpdateProgress await(String updateId, Duration poll, Consumer<UpdateProgress> each)
            throws InterruptedException {
        // A long poll: the loader answers as soon as the update has an outcome, or after `poll`
        // with its progress; no request in between (polling every few milliseconds took CPU from
        // the loaders moving the bytes, and an outcome was seen up to one interval late).
        int waitMs = (int) Math.max(1, Math.min(MAX_WAIT_MS, poll.toMillis()));
        while (true) {
            UpdateProgress p = updatesApi.getUpdate(updateId, waitMs);
            each.accept(p);
            if (p.getOutcome() != UpdateOutcome.RUNNING) {
                return p;
            }
        }
    }
}
