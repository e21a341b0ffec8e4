package io.weightrelay.loader.update;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlane.Barrier;
import io.weightrelay.loader.control.ControlPlane.BarrierState;
import io.weightrelay.loader.control.ControlPlane.GenerationRef;
import io.weightrelay.loader.control.ControlPlane.PlanRef;
import io.weightrelay.loader.control.ControlPlane.Preparation;
import io.weightrelay.loader.control.ControlPlane.PrepareCall;
import io.weightrelay.loader.control.ControlPlane.Report;
import io.weightrelay.loader.control.ControlPlane.Reported;
import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.instance.InstanceService;
import io.weightrelay.loader.pipeline.ApplyCounts;
import io.weightrelay.loader.pipeline.ApplyFailure;
import io.weightrelay.loader.pipeline.BufferDirectory;
import io.weightrelay.loader.pipeline.LandedProof;
import io.weightrelay.loader.pipeline.Laps;
import io.weightrelay.loader.pipeline.PrepareRequest;
import io.weightrelay.loader.update.UpdateRun.Outcome;
import io.weightrelay.loader.update.UpdateRun.Phase;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.service.concurrent.DaemonThreads;
import io.weightrelay.service.problem.CommonProblems;
import jakarta.annotation.PreDestroy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * Runs updates, one at a time, on a thread of their own: prepare -> apply -> post-apply with the
 * group's barriers in control-api. Outcomes: {@code UPDATED}; {@code RESUMED_OLD} when anything
 * fails before the all-prepared barrier opens (nothing was touched, provisional registrations are
 * dropped, the engine resumes on its old generation); {@code PAUSED_REBUILD} when anything fails
 * after (buffers may hold a mix, so the instance is paused until it is rebuilt). Never retries in
 * place. Every failure names its peer: a loader instance, a worker, a store object, or control-api.
 */
@Service
public class UpdateCoordinator {
    private static final Logger log = LoggerFactory.getLogger(UpdateCoordinator.class);
    private static final int KEPT_RUNS = 32;
    static final String CONTROL_API = "control-api";

    /**
     * How often a POST_APPLIED that did not reach control-api is sent again, one heartbeat apart
     * (an hour at the default 5 s: control-api keeps a session that long).
     */
    static final int POST_APPLIED_RETRIES = 720;

    /** Refusals of a prepare that name the generation, not control-api, as at fault. */
    private static final Set<String> GENERATION_REFUSALS =
            Set.of("generation-not-found", "generation-not-committed", "generation-lost");

    private final InstanceService instances;
    private final ControlPlane control;
    private final UpdateSteps steps;
    private final LoaderProperties properties;
    private final UpdateMetrics metrics;
    private final ExecutorService worker =
            Executors.newSingleThreadExecutor(DaemonThreads.named("update"));

    /** Asks control-api about the session while an apply runs ({@link #watchSession}). */
    private final ScheduledExecutorService watcher =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("session-watch"));

    /** A model's first manifest, fetched beside the prepare call. */
    private final ExecutorService calls =
            Executors.newSingleThreadExecutor(DaemonThreads.named("update-calls"));

    private final Map<String, UpdateRun> runs =
            new LinkedHashMap<>() {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, UpdateRun> eldest) {
                    return size() > KEPT_RUNS;
                }
            };
    private UpdateRun last;
    private volatile CachedManifest lastManifest;
    private volatile CachedSlice lastSlice;

    private volatile CachedBuffers lastBuffers;

    private record CachedSlice(String planId, Slice slice) {}

    /** A manifest with its digest, computed once (it hashes the whole encoding). */
    private record CachedManifest(String digest, SourceManifest manifest) {}

    /** The group's buffers as of the digest control-api gave them with. */
    private record CachedBuffers(String digest, BufferDirectory directory) {}

    public UpdateCoordinator(
            InstanceService instances,
            ControlPlane control,
            UpdateSteps steps,
            LoaderProperties properties,
            MeterRegistry meters) {
        this.instances = instances;
        this.control = control;
        this.steps = steps;
        this.properties = properties;
        this.metrics = new UpdateMetrics(meters);
    }

    /**
     * Starts an update of the (drained) engine to {@code generation}, or to the active one.
     *
     * @return the run, already under way
     */
    public UpdateRun start(Long generation, Duration timeout) {
        Instance instance = instances.beginUpdate();
        try {
            long target =
                    generation != null
                            ? generation
                            : control.activeGeneration(instance.model()).generation();
            UpdateRun run =
                    new UpdateRun(
                            instance.instanceId()
                                    + ":g"
                                    + target
                                    + ":"
                                    + UUID.randomUUID().toString().substring(0, 8),
                            target,
                            instance.generation());
            synchronized (this) {
                runs.put(run.id(), run);
                last = run;
            }
            worker.execute(() -> execute(instance, run, timeout));
            return run;
        } catch (ControlPlaneException e) {
            instances.endUpdate(instance.epoch(), null, false);
            if (e.status() == 404) {
                throw UpdateProblems.GENERATION_NOT_FOUND.exception(
                        "model " + instance.model() + " has no active generation", e);
            }
            throw CommonProblems.UNAVAILABLE.exception(e.getMessage(), e);
        } catch (RuntimeException e) {
            instances.endUpdate(instance.epoch(), null, false);
            throw e;
        }
    }

    public synchronized Optional<UpdateRun> find(String id) {
        return Optional.ofNullable(runs.get(id));
    }

    public synchronized Optional<UpdateRun> current() {
        return Optional.ofNullable(last);
    }

    /** A failure, named. */
    private record Failure(String peer, String message) {}

    /**
     * As {@link #failure(Instance, RuntimeException)}, except for a report control-api refused
     * because the session had already ended (another loader failed it first): this loader's failure
     * is then the session's, naming who failed it and why, not a 409 from control-api.
     */
    private Failure failure(Instance instance, long generation, RuntimeException e) {
        if (e instanceof ControlPlaneException c
                && c.status() == 409
                && "session-closed".equals(c.problemType())) {
            try {
                BarrierState s = session(instance, generation, Barrier.PREPARED);
                if (s.failed() && s.failure() != null) {
                    return new Failure(
                            s.failedInstance() != null ? s.failedInstance() : CONTROL_API,
                            "the session ended before this loader's report: " + s.failure());
                }
            } catch (RuntimeException lookup) {
                log.warn("reading why the session ended failed: {}", lookup.toString());
            }
        }
        return failure(instance, e);
    }

    /**
     * The session as {@code barrier}'s status shows it now: touched (so control-api applies a
     * timeout or a participant's end that passed), not waited on.
     */
    private BarrierState session(Instance instance, long generation, Barrier barrier) {
        return control.awaitBarrier(
                instance.model(), generation, instance.group(), barrier, Duration.ZERO);
    }

    private Failure failure(Instance instance, RuntimeException e) {
        if (e instanceof ApplyFailure a) {
            return new Failure(a.failingPeer(), a.getMessage());
        }
        if (e instanceof ControlPlaneException) {
            return new Failure(CONTROL_API, e.getMessage());
        }
        return new Failure(instance.instanceId(), String.valueOf(e));
    }

    private void execute(Instance instance, UpdateRun run, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        String model = instance.model();
        String group = instance.group();
        String id = instance.instanceId();
        long generation = run.generation();
        Long advanced = null;
        boolean pause = false;
        Outcome outcome = Outcome.PAUSED_REBUILD;
        Phase end = Phase.PAUSED_REBUILD;
        Failure failure = null;
        boolean leased = false;
        UpdateSteps.PreparedUpdate prepared = null;
        try {
            // ---- prepare: touches nothing ----
            try {
                run.enter(Phase.PREPARING);
                Laps watch = new Laps();
                // No manifest of this model yet (the first update): it is fetched beside the
                // prepare call, which may be computing the plan now, and checked against the
                // digest below.
                CachedManifest cached = lastManifest;
                CompletableFuture<SourceManifest> fetching =
                        cached != null && cached.manifest().model().equals(model)
                                ? null
                                : CompletableFuture.supplyAsync(
                                        () -> control.manifest(model, generation), calls);
                // One round trip for the generation's state, the plan, the session and the
                // lease; the group's buffers come with it only when they changed since the last
                // prepare. A failed call holds no lease (control-api takes it last).
                CachedBuffers buffers = lastBuffers;
                // The objects the last plan's slice reads are checked meanwhile: the plan is the
                // same whenever the manifest and the group are, and prepare checks again when not.
                CachedSlice known = lastSlice;
                if (known != null) {
                    steps.checkReadsAhead(model, generation, known.slice());
                }
                Preparation answer;
                try {
                    answer =
                            control.prepare(
                                    new PrepareCall(
                                            model,
                                            generation,
                                            group,
                                            id,
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
                leased = true;
                watch.lap("prepare-call");
                GenerationRef g = answer.generation();
                if (!g.state().equals("ACTIVE") && !g.state().equals("RETIRED")) {
                    throw new ApplyFailure(
                            model + "/" + generation,
                            "generation " + generation + " of " + model + " is " + g.state());
                }
                if (g.corruptObject() != null) {
                    throw new ApplyFailure(
                            model + "/" + generation + "/" + g.corruptObject(),
                            "generation "
                                    + generation
                                    + " of "
                                    + model
                                    + " is corrupt: object "
                                    + g.corruptObject()
                                    + " does not match its published checksum");
                }
                SourceManifest manifest;
                if (cached != null
                        && cached.manifest().model().equals(model)
                        && cached.digest().equals(g.manifestDigest())) {
                    manifest = cached.manifest();
                } else {
                    // A new manifest digest only; every generation of the same manifest shares it.
                    manifest =
                            fetching != null ? join(fetching) : control.manifest(model, generation);
                    String digest = manifest.digest();
                    if (!digest.equals(g.manifestDigest())) {
                        throw new ApplyFailure(
                                CONTROL_API,
                                "manifest of generation "
                                        + generation
                                        + " does not match its digest");
                    }
                    lastManifest = new CachedManifest(digest, manifest);
                }
                watch.lap("manifest");
                PlanRef ref = answer.plan();
                if (!ref.valid()) {
                    throw new ApplyFailure(CONTROL_API, "plan " + ref.planId() + " is not valid");
                }
                if (!ref.instances().contains(id)) {
                    throw new ApplyFailure(
                            CONTROL_API, "plan " + ref.planId() + " has no part for " + id);
                }
                Slice slice =
                        lastSlice != null && lastSlice.planId().equals(ref.planId())
                                ? lastSlice.slice()
                                : null;
                if (slice == null) {
                    // Plans are immutable per id: fetch this loader's slice once, reuse it every
                    // generation until the plan changes.
                    slice = control.slice(ref.planId(), id);
                    lastSlice = new CachedSlice(ref.planId(), slice);
                    // Not the slice checked beside the call: its reads are checked now, beside
                    // the validation of the slice.
                    steps.checkReadsAhead(model, generation, slice);
                }
                watch.lap("fetch-slice");
                BufferDirectory directory;
                if (buffers != null && buffers.digest().equals(answer.buffersDigest())) {
                    directory = buffers.directory();
                } else if (!answer.buffers().isEmpty()) {
                    // The buffers the plan was resolved against, read with it: the directory
                    // holds every worker the plan names.
                    directory = new BufferDirectory(answer.buffers());
                    lastBuffers = new CachedBuffers(answer.buffersDigest(), directory);
                } else {
                    throw new ApplyFailure(
                            CONTROL_API,
                            "control-api left out the group's buffers, but their digest "
                                    + answer.buffersDigest()
                                    + " is not the one this loader named");
                }
                watch.lap("loaders");
                prepared =
                        steps.prepare(
                                new PrepareRequest(
                                        model,
                                        generation,
                                        instance.epoch(),
                                        id,
                                        instance.workerIds(),
                                        manifest,
                                        slice,
                                        directory,
                                        reshardWorkers(instance, manifest)));
                watch.lap("validate-check-register");
                run.total(prepared.bytesTotal());
                run.enter(Phase.PREPARED);
                // The store reads start now and fill staging while the others prepare: no worker
                // buffer is written before the barrier.
                prepared.readAhead(remaining(deadline), run::progress);
                arrive(
                        instance,
                        generation,
                        Report.of(id, instance.epoch(), Reported.PREPARED),
                        Barrier.PREPARED,
                        deadline);
                watch.lap("prepared-barrier");
                log.info("prepare of {}: {}", run.id(), watch);
            } catch (RuntimeException e) {
                failure = failure(instance, generation, e);
                reportFailed(instance, generation, failure);
                if (prepared != null) {
                    // before the registrations go: its reads land in this update's staging
                    prepared.abandon();
                }
                try {
                    steps.discard();
                } catch (RuntimeException d) {
                    log.warn("dropping provisional registrations failed: {}", d.toString());
                }
                if (leased && !Long.valueOf(generation).equals(instance.generation())) {
                    releaseLease(model, generation, id);
                }
                outcome = Outcome.RESUMED_OLD;
                end = Phase.RESUMED_OLD;
                return;
            }
            // ---- apply: from here on buffers may hold a mix of generations ----
            try {
                run.enter(Phase.APPLYING);
                // For operators only: APPLIED is taken straight from PREPARED, and an APPLYING
                // that lands after it changes nothing, so the apply does not wait a round trip.
                calls.execute(
                        () -> {
                            try {
                                reportQuietly(instance, generation, Reported.APPLYING);
                            } catch (RuntimeException e) {
                                log.warn("reporting APPLYING failed: {}", e.toString());
                            }
                        });
                ApplyCounts counts;
                ScheduledFuture<?> watching = watchSession(instance, generation, prepared);
                try {
                    counts = prepared.apply(remaining(deadline), run::progress);
                } finally {
                    if (watching != null) {
                        watching.cancel(false);
                    }
                }
                run.counts(counts);
                if (counts.sent() != null) {
                    proveLanded(instance, generation, prepared, counts, deadline);
                }
                run.enter(Phase.APPLIED);
                arrive(
                        instance,
                        generation,
                        new Report(
                                id,
                                instance.epoch(),
                                Reported.APPLIED,
                                counts.bytesRead(),
                                counts.bytesPushed() + counts.bytesFannedOut(),
                                counts.bytesReceived(),
                                null,
                                null,
                                counts.checksums()),
                        Barrier.APPLIED,
                        deadline);
            } catch (RuntimeException e) {
                failure = failure(instance, generation, e);
                reportFailed(instance, generation, failure);
                pause = true;
                outcome = Outcome.PAUSED_REBUILD;
                end = Phase.PAUSED_REBUILD;
                return;
            }
            // ---- post-apply: every loader applied ----
            run.enter(Phase.POST_APPLYING);
            steps.promote();
            advanced = generation;
            // The step that records POST_APPLIED also releases this loader's leases on the
            // model's other generations (the one it served before, and any a failed update left),
            // so the update costs no call of its own for them. It ends before the engine hears
            // UPDATED: whoever saw the outcome sees the session's reports and the leases as they
            // end.
            reportPostApplied(instance, generation, 0);
            outcome = Outcome.UPDATED;
            end = Phase.DONE;
        } catch (RuntimeException e) {
            // Only post-apply bookkeeping can land here; the bytes are in and agreed on.
            log.error("post-apply of {} failed", run.id(), e);
            outcome = advanced != null ? Outcome.UPDATED : Outcome.PAUSED_REBUILD;
            end = advanced != null ? Phase.DONE : Phase.PAUSED_REBUILD;
            pause = advanced == null;
            failure = failure(instance, e);
        } finally {
            // The instance's state first, so an engine that sees the outcome sees it applied.
            instances.endUpdate(instance.epoch(), advanced, pause);
            finish(run, outcome, end, failure);
        }
    }

    /**
     * SENT, with the digests of what this loader's writes put into each instance's buffers; once
     * every participant sent (the sent barrier), what was sent to this instance, proven against its
     * buffers as they hold the bytes. A difference throws, naming the sender, worker, buffer and
     * generation: this loader then reports FAILED instead of APPLIED, so the applied barrier never
     * opens and no engine advances.
     */
    private void proveLanded(
            Instance instance,
            long generation,
            UpdateSteps.PreparedUpdate prepared,
            ApplyCounts counts,
            long deadline) {
        Map<String, byte[]> sent = new java.util.TreeMap<>();
        counts.sent().forEach((to, digests) -> sent.put(to, LandedProof.encode(digests)));
        arrive(
                instance,
                generation,
                Report.sent(instance.instanceId(), instance.epoch(), sent),
                Barrier.SENT,
                deadline);
        prepared.proveLanded(
                control.landed(
                        instance.model(), generation, instance.group(), instance.instanceId()));
    }

    private static java.util.List<io.weightrelay.reshard.placement.Worker> reshardWorkers(
            Instance instance, SourceManifest manifest) {
        try {
            return instance.reshardWorkers(manifest);
        } catch (IllegalArgumentException e) {
            throw new ApplyFailure(instance.instanceId(), e.getMessage(), e);
        }
    }

    private void finish(UpdateRun run, Outcome outcome, Phase end, Failure failure) {
        run.finish(
                outcome,
                end,
                failure == null ? null : failure.peer(),
                failure == null ? null : failure.message());
        metrics.finished(run.snapshot());
        if (failure == null) {
            log.info("update {} ended {}", run.id(), outcome);
        } else {
            log.warn(
                    "update {} ended {}: {} ({})",
                    run.id(),
                    outcome,
                    failure.message(),
                    failure.peer());
        }
    }

    /** The call's result, or its own exception (a {@link ControlPlaneException}, say). */
    private static <T> T join(CompletableFuture<T> call) {
        try {
            return call.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw e;
        }
    }

    private Duration remaining(long deadline) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new ApplyFailure(CONTROL_API, "the update ran out of time");
        }
        return Duration.ofNanos(left);
    }

    /**
     * Reports the phase {@code barrier} waits for and waits until it opens, in one call to
     * control-api (then long-polls it while it stays shut).
     */
    private void arrive(
            Instance instance, long generation, Report report, Barrier barrier, long deadline) {
        BarrierState s =
                control.arrive(
                        instance.model(),
                        generation,
                        instance.group(),
                        report,
                        barrier,
                        barrierWait(deadline));
        while (true) {
            if (s.open()) {
                return;
            }
            if (s.failed()) {
                String peer = s.failedInstance() != null ? s.failedInstance() : CONTROL_API;
                throw new ApplyFailure(
                        peer,
                        "barrier "
                                + barrier.wire()
                                + " failed: "
                                + (s.failure() != null ? s.failure() : peer + " failed"));
            }
            if (System.nanoTime() - deadline >= 0) {
                // Name who kept it shut: a loader that died after its bytes moved is found by no
                // peer's transfer, only by its missing report.
                if (!s.waiting().isEmpty()) {
                    throw new ApplyFailure(
                            s.waiting().get(0),
                            "barrier "
                                    + barrier.wire()
                                    + " did not open in time: no report from "
                                    + String.join(", ", s.waiting()));
                }
                throw new ApplyFailure(
                        CONTROL_API, "barrier " + barrier.wire() + " did not open in time");
            }
            s =
                    control.awaitBarrier(
                            instance.model(),
                            generation,
                            instance.group(),
                            barrier,
                            barrierWait(deadline));
        }
    }

    /**
     * How long one barrier request may wait: up to the deadline, and no wait at all once it passed
     * (one last look, after which {@link #arrive} names who kept the barrier shut rather than
     * blaming control-api for the time).
     */
    private Duration barrierWait(long deadline) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            return Duration.ZERO;
        }
        Duration wait = Duration.ofNanos(left);
        return wait.compareTo(properties.barrierWait()) < 0 ? wait : properties.barrierWait();
    }

    /** Reports a phase no barrier waits on: a failure to report is logged, not fatal. */
    private void reportQuietly(Instance instance, long generation, Reported phase) {
        try {
            send(instance, generation, Report.of(instance.instanceId(), instance.epoch(), phase));
        } catch (ControlPlaneException e) {
            log.warn("reporting {} failed: {}", phase, e.getMessage());
        }
    }

    /**
     * Reports POST_APPLIED; one that does not reach control-api (its reply lost, control-api away)
     * is sent again every {@code relay.loader.heartbeat} until control-api answers, for at most
     * {@link #POST_APPLIED_RETRIES} times: the report is idempotent, and it is what records the
     * generation this loader serves and releases its leases on the others. Without it, the group's
     * session would end with this loader unconfirmed and its old generation held by its beats.
     * Given up when the loader registered again (a new life confirms nothing of the old one) or
     * control-api refused the report for good (the session ended without it, or is gone).
     */
    private void reportPostApplied(Instance instance, long generation, int attempt) {
        if (attempt > 0
                && instances.current().map(i -> i.epoch() != instance.epoch()).orElse(true)) {
            log.warn(
                    "POST_APPLIED of {} for generation {} given up: the loader registered again",
                    instance.instanceId(),
                    generation);
            return;
        }
        try {
            send(
                    instance,
                    generation,
                    Report.of(instance.instanceId(), instance.epoch(), Reported.POST_APPLIED));
            if (attempt > 0) {
                log.info(
                        "POST_APPLIED of {} for generation {} reached control-api at attempt {}",
                        instance.instanceId(),
                        generation,
                        attempt + 1);
            }
        } catch (ControlPlaneException e) {
            boolean settled = e.refusedInput() || e.status() == 404;
            if (settled || attempt >= POST_APPLIED_RETRIES) {
                log.warn("reporting POST_APPLIED failed for good: {}", e.getMessage());
                return;
            }
            log.warn(
                    "reporting POST_APPLIED failed, sending it again in {}: {}",
                    properties.heartbeat(),
                    e.getMessage());
            try {
                watcher.schedule(
                        () -> reportPostApplied(instance, generation, attempt + 1),
                        properties.heartbeat().toMillis(),
                        TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
                log.warn("POST_APPLIED not sent again: the loader is stopping");
            }
        }
    }

    private void reportFailed(Instance instance, long generation, Failure f) {
        try {
            send(
                    instance,
                    generation,
                    Report.failed(instance.instanceId(), instance.epoch(), f.peer(), f.message()));
        } catch (RuntimeException e) {
            log.warn("reporting FAILED failed: {}", e.toString());
        }
    }

    private void send(Instance instance, long generation, Report report) {
        control.report(instance.model(), generation, instance.group(), report);
    }

    private void releaseLease(String model, long generation, String holder) {
        try {
            control.releaseLease(model, generation, holder);
        } catch (RuntimeException e) {
            log.warn("releasing the lease on {}/{} failed: {}", model, generation, e.toString());
        }
    }

    /**
     * While {@code prepared} applies, asks control-api every {@code relay.loader.session-watch}
     * whether the session failed (a touch, so phase timeouts and the liveness of the participants
     * are judged too) and stops the apply, naming the session's failing peer, when it has: a peer
     * that failed or died mid-apply would otherwise leave this loader waiting out its deadline for
     * bytes that never come. Null when watching is off.
     */
    private ScheduledFuture<?> watchSession(
            Instance instance, long generation, UpdateSteps.PreparedUpdate prepared) {
        Duration every = properties.sessionWatch();
        if (every.isZero() || every.isNegative()) {
            return null;
        }
        return watcher.scheduleWithFixedDelay(
                () -> {
                    try {
                        BarrierState s = session(instance, generation, Barrier.APPLIED);
                        if (s.failed()) {
                            prepared.stop(
                                    new ApplyFailure(
                                            s.failedInstance() != null
                                                    ? s.failedInstance()
                                                    : CONTROL_API,
                                            "the update session failed while this loader applied: "
                                                    + (s.failure() == null
                                                            ? "no reason given"
                                                            : s.failure())));
                        }
                    } catch (RuntimeException e) {
                        // control-api unreachable now: the apply goes on, its deadline still holds
                        log.debug("watching the session failed: {}", e.toString());
                    }
                },
                every.toMillis(),
                every.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    @PreDestroy
    void stop() {
        worker.shutdownNow();
        calls.shutdownNow();
        watcher.shutdownNow();
    }
}
