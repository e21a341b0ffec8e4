package io.weightrelay.loader.update;

import static io.weightrelay.loader.update.NamedFailure.CONTROL_API;

import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlane.GenerationRef;
import io.weightrelay.loader.control.ControlPlane.PlanRef;
import io.weightrelay.loader.control.ControlPlane.Preparation;
import io.weightrelay.loader.control.ControlPlane.PrepareCall;
import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.pipeline.ApplyFailure;
import io.weightrelay.loader.pipeline.BufferDirectory;
import io.weightrelay.loader.pipeline.Laps;
import io.weightrelay.loader.pipeline.PrepareRequest;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.service.concurrent.FutureResults;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * What a prepare needs before it validates anything: one prepare call to control-api (the
 * generation's state, the plan, the session and the lease; the group's buffers only when they
 * changed), then the manifest, this loader's slice of the plan and the group's buffer directory,
 * each fetched again only when it changed since the last update (by manifest digest, plan id and
 * buffers digest). Checks that the generation is one to load and that the plan has a part for this
 * loader. Updates run one at a time, so the cached answers are only ever replaced by one thread.
 */
final class PrepareInputs {

    /** Refusals of a prepare that name the generation, not control-api, as at fault. */
    private static final Set<String> GENERATION_REFUSALS =
            Set.of("generation-not-found", "generation-not-committed", "generation-lost");

    private final ControlPlane control;
    private final UpdateSteps steps;
    private final LoaderProperties properties;

    /** Where a model's first manifest is fetched, beside the prepare call. */
    private final Executor calls;

    private volatile CachedManifest lastManifest;
    private volatile CachedSlice lastSlice;
    private volatile CachedBuffers lastBuffers;

    private record CachedSlice(String planId, Slice slice) {}

    /** A manifest with its digest, computed once (it hashes the whole encoding). */
    private record CachedManifest(String digest, SourceManifest manifest) {}

    /** The group's buffers as of the digest control-api gave them with. */
    private record CachedBuffers(String digest, BufferDirectory directory) {}

    /**
     * The prepare call's answer, with what was known when it was made: the cached manifest and
     * buffers it is judged against, and the manifest's fetch when none of the model was cached.
     */
    record Called(
            Instance instance,
            long generation,
            Preparation answer,
            CachedManifest cached,
            CompletableFuture<SourceManifest> fetching,
            CachedBuffers buffers) {}

    PrepareInputs(
            ControlPlane control, UpdateSteps steps, LoaderProperties properties, Executor calls) {
        this.control = control;
        this.steps = steps;
        this.properties = properties;
        this.calls = calls;
    }

    /**
     * The prepare call. Once it answered, control-api holds this loader's lease on the generation;
     * a failed call holds none (control-api takes it last). The reads of the last plan's slice are
     * checked meanwhile, and a model's first manifest is fetched.
     */
    Called call(Instance instance, long generation, Duration timeout) {
        String model = instance.model();
        // No manifest of this model yet (the first update): it is fetched beside the prepare
        // call, which may be computing the plan now, and checked against the digest later.
        CachedManifest cached = lastManifest;
        CompletableFuture<SourceManifest> fetching =
                cached != null && cached.manifest().model().equals(model)
                        ? null
                        : CompletableFuture.supplyAsync(
                                () -> control.manifest(new GenerationId(model, generation)), calls);
        // One round trip for the generation's state, the plan, the session and the lease; the
        // group's buffers come with it only when they changed since the last prepare.
        CachedBuffers buffers = lastBuffers;
        // The objects the last plan's slice reads are checked meanwhile: the plan is the same
        // whenever the manifest and the group are, and prepare checks again when not.
        CachedSlice known = lastSlice;
        if (known != null) {
            steps.checkReadsAhead(new GenerationId(model, generation), known.slice());
        }
        Preparation answer;
        try {
            answer =
                    control.prepare(
                            new PrepareCall(
                                    model,
                                    generation,
                                    instance.group(),
                                    instance.instanceId(),
                                    properties.leaseTtl(),
                                    timeout,
                                    buffers == null ? null : buffers.digest()));
        } catch (ControlPlaneException e) {
            if (GENERATION_REFUSALS.contains(e.problemType())) {
                // Nothing is wrong with control-api: the generation is not one to load.
                throw new ApplyFailure(model + "/" + generation, e.getMessage(), e);
            }
            throw e;
        }
        return new Called(instance, generation, answer, cached, fetching, buffers);
    }

    /**
     * What {@link UpdateSteps#prepare} validates and registers, from the call's answer: laps
     * "manifest", "fetch-slice" and "loaders" on {@code watch}.
     */
    PrepareRequest request(Called called, Laps watch) {
        Instance instance = called.instance();
        long generation = called.generation();
        Preparation answer = called.answer();
        requireLoadable(new GenerationId(instance.model(), generation), answer.generation());
        SourceManifest manifest = manifest(called);
        watch.lap("manifest");
        Slice slice = slice(instance, generation, answer.plan());
        watch.lap("fetch-slice");
        // control-api knows every worker's buffers by segment name only; where this loader's own
        // workers' memory is (a worker's own Transfer Engine) is in its own registration
        BufferDirectory directory =
                directory(answer, called.buffers()).withOwnWorkers(instance.buffers());
        watch.lap("loaders");
        return new PrepareRequest(
                instance.model(),
                generation,
                instance.epoch(),
                instance.instanceId(),
                instance.workerIds(),
                manifest,
                slice,
                directory,
                reshardWorkers(instance, manifest));
    }

    /** Refuses a generation that is not committed or holds an object that failed its proof. */
    private static void requireLoadable(GenerationId id, GenerationRef g) {
        if (!g.state().loadable()) {
            throw new ApplyFailure(
                    id.path(),
                    "generation " + id.generation() + " of " + id.model() + " is " + g.state());
        }
        if (g.corruptObject() != null) {
            throw new ApplyFailure(
                    id.objectKey(g.corruptObject()),
                    "generation "
                            + id.generation()
                            + " of "
                            + id.model()
                            + " is corrupt: object "
                            + g.corruptObject()
                            + " does not match its published checksum");
        }
    }

    /**
     * The generation's manifest: the cached one while the digest holds, else fetched and proven.
     */
    private SourceManifest manifest(Called called) {
        String model = called.instance().model();
        long generation = called.generation();
        GenerationRef g = called.answer().generation();
        CachedManifest cached = called.cached();
        if (cached != null
                && cached.manifest().model().equals(model)
                && cached.digest().equals(g.manifestDigest())) {
            return cached.manifest();
        }
        // A new manifest digest only; every generation of the same manifest shares it.
        SourceManifest manifest =
                called.fetching() != null
                        ? FutureResults.join(called.fetching())
                        : control.manifest(new GenerationId(model, generation));
        String digest = manifest.digest();
        if (!digest.equals(g.manifestDigest())) {
            throw new ApplyFailure(
                    CONTROL_API,
                    "manifest of generation " + generation + " does not match its digest");
        }
        lastManifest = new CachedManifest(digest, manifest);
        return manifest;
    }

    /** This loader's slice of the plan, which must be valid and give this loader a part. */
    private Slice slice(Instance instance, long generation, PlanRef ref) {
        String id = instance.instanceId();
        if (!ref.valid()) {
            throw new ApplyFailure(CONTROL_API, "plan " + ref.planId() + " is not valid");
        }
        if (!ref.instances().contains(id)) {
            throw new ApplyFailure(CONTROL_API, "plan " + ref.planId() + " has no part for " + id);
        }
        CachedSlice last = lastSlice;
        if (last != null && last.planId().equals(ref.planId())) {
            return last.slice();
        }
        // Plans are immutable per id: fetch this loader's slice once, reuse it every generation
        // until the plan changes.
        Slice slice = control.slice(ref.planId(), id);
        lastSlice = new CachedSlice(ref.planId(), slice);
        // Not the slice checked beside the call: its reads are checked now, beside the validation
        // of the slice.
        steps.checkReadsAhead(new GenerationId(instance.model(), generation), slice);
        return slice;
    }

    /** The group's buffers: those named by the digest this loader sent, or those answered. */
    private BufferDirectory directory(Preparation answer, CachedBuffers buffers) {
        if (buffers != null && buffers.digest().equals(answer.buffersDigest())) {
            return buffers.directory();
        }
        if (!answer.buffers().isEmpty()) {
            // The buffers the plan was resolved against, read with it: the directory holds every
            // worker the plan names.
            BufferDirectory directory = new BufferDirectory(answer.buffers());
            lastBuffers = new CachedBuffers(answer.buffersDigest(), directory);
            return directory;
        }
        throw new ApplyFailure(
                CONTROL_API,
                "control-api left out the group's buffers, but their digest "
                        + answer.buffersDigest()
                        + " is not the one this loader named");
    }

    private static List<Worker> reshardWorkers(Instance instance, SourceManifest manifest) {
        try {
            return instance.reshardWorkers(manifest);
        } catch (IllegalArgumentException e) {
            throw new ApplyFailure(instance.instanceId(), e.getMessage(), e);
        }
    }
}
