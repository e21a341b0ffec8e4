package io.weightrelay.loader.update;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlane.Barrier;
import io.weightrelay.loader.control.ControlPlane.Report;
import io.weightrelay.loader.control.ControlPlane.Reported;
import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.instance.InstanceService;
import io.weightrelay.loader.pipeline.ApplyCounts;
import io.weightrelay.loader.pipeline.ApplyFailure;
import io.weightrelay.loader.pipeline.LandedProof;
import io.weightrelay.loader.pipeline.Laps;
import io.weightrelay.loader.update.UpdateRun.Outcome;
import io.weightrelay.loader.update.UpdateRun.Phase;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.service.concurrent.DaemonThreads;
import io.weightrelay.service.problem.CommonProblems;
import jakarta.annotation.PreDestroy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * Runs updates, one at a time, on a thread of their own: prepare -> apply -> install -> post-apply
 * with the group's barriers in control-api. Prepare and apply are the <em>fetch</em>: it ends when
 * the applied barrier opens, every loader of the group having fetched and proven its bytes; only
 * then does any instance install. An update started to install on request waits there ({@link
 * Phase#FETCHED}) until the engine, which served through the fetch, drains and calls {@link
 * #install}. Outcomes: {@code UPDATED}; {@code RESUMED_OLD} when anything fails before the
 * all-prepared barrier opens (nothing was touched, provisional registrations are dropped, the
 * engine resumes on its old generation), or, for an instance whose fetch writes nothing its engine
 * serves from (compat workers receive into an image apart from the engine's weights, staged direct
 * workers into the loader's own copy), before the install, whether the engine served through the
 * fetch or drained for a one-call update; {@code PAUSED_REBUILD} when anything fails after (an
 * in-place direct worker's buffers, which its engine serves from, may hold a mix, so the instance
 * is paused until it is rebuilt). Never retries in place. Every failure names its peer: a loader
 * instance, a worker, a store object, or control-api.
 *
 * <p>This class holds the sequence; what a prepare fetches is {@link PrepareInputs}'s, the talk
 * with the group's session {@link GroupSession}'s, the resent POST_APPLIED {@link
 * PostAppliedReport}'s, and the work on the data plane {@link UpdateSteps}'s.
 */
@Service
public class UpdateCoordinator {
    private static final Logger log = LoggerFactory.getLogger(UpdateCoordinator.class);
    private static final int KEPT_RUNS = 32;

    private final InstanceService instances;
    private final ControlPlane control;
    private final UpdateSteps steps;
    private final LoaderProperties properties;
    private final UpdateMetrics metrics;
    private final PrepareInputs inputs;
    private final PostAppliedReport postApplied;
    private final ExecutorService worker =
            Executors.newSingleThreadExecutor(DaemonThreads.named("update"));

    /**
     * Asks control-api about the session while an apply runs ({@link GroupSession#watch}) and sends
     * a POST_APPLIED again.
     */
    private final ScheduledExecutorService watcher =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("session-watch"));

    /** A model's first manifest, fetched beside the prepare call, and the APPLYING report. */
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
        this.inputs = new PrepareInputs(control, steps, properties, calls);
        this.postApplied = new PostAppliedReport(control, instances, properties, watcher);
    }

    /**
     * Starts an update of the (drained) engine to {@code generation}, or to the active one,
     * installed as soon as the group fetched.
     *
     * @return the run, already under way
     */
    public UpdateRun start(Long generation, Duration timeout) {
        return start(generation, timeout, false);
    }

    /**
     * Starts an update to {@code generation}, or to the active one. With {@code installOnRequest}
     * the engine keeps serving: the update stops at {@link Phase#FETCHED} until {@link #install};
     * refused for an instance whose fetch writes the weights it serves from (in-place direct
     * workers).
     *
     * @return the run, already under way
     */
    public UpdateRun start(Long generation, Duration timeout, boolean installOnRequest) {
        Instance instance = instances.beginUpdate();
        try {
            if (installOnRequest && instance.fetchWritesServingWeights()) {
                throw CommonProblems.CONFLICT.exception(
                        "instance "
                                + instance.instanceId()
                                + " has in-place direct workers: their fetch writes the weights"
                                + " the engine serves from, so it drains and updates in one call"
                                + " (or registers with directInstall: staged)");
            }
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
                            instance.generation(),
                            installOnRequest);
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

    /**
     * The engine drained and asks to install the update {@code id}, which waits at {@link
     * Phase#FETCHED}.
     *
     * @return the run, installing
     */
    public UpdateRun install(String id) {
        UpdateRun run =
                find(id).orElseThrow(
                                () -> UpdateProblems.UPDATE_NOT_FOUND.exception("no update " + id));
        try {
            run.requestInstall();
        } catch (IllegalStateException e) {
            throw CommonProblems.CONFLICT.exception(e.getMessage());
        }
        return run;
    }

    /**
     * The engine cannot take the fetched update {@code id}: it ends {@code RESUMED_OLD} naming
     * {@code reason}, and the group hears it at once.
     */
    public UpdateRun decline(String id, String reason) {
        UpdateRun run =
                find(id).orElseThrow(
                                () -> UpdateProblems.UPDATE_NOT_FOUND.exception("no update " + id));
        try {
            run.decline(reason);
        } catch (IllegalStateException e) {
            throw CommonProblems.CONFLICT.exception(e.getMessage());
        }
        return run;
    }

    public synchronized Optional<UpdateRun> find(String id) {
        return Optional.ofNullable(runs.get(id));
    }

    public synchronized Optional<UpdateRun> current() {
        return Optional.ofNullable(last);
    }

    /** One update under way: whose, its run, its deadline (on {@link System#nanoTime()}). */
    private record Update(
            Instance instance,
            UpdateRun run,
            Duration timeout,
            long deadline,
            GroupSession session) {
        long generation() {
            return run.generation();
        }
    }

    /** How an update ended: what the instance's state and the run are told. */
    private record Ending(
            Outcome outcome, Phase end, Long advanced, boolean pause, NamedFailure failure) {
        /** What an update that ended without an outcome (an {@link Error}) leaves. */
        static final Ending UNDECIDED =
                new Ending(Outcome.PAUSED_REBUILD, Phase.PAUSED_REBUILD, null, false, null);

        static Ending resumedOld(NamedFailure failure) {
            return new Ending(Outcome.RESUMED_OLD, Phase.RESUMED_OLD, null, false, failure);
        }

        static Ending pausedForRebuild(NamedFailure failure) {
            return new Ending(Outcome.PAUSED_REBUILD, Phase.PAUSED_REBUILD, null, true, failure);
        }

        static Ending updated(long generation, NamedFailure failure) {
            return new Ending(Outcome.UPDATED, Phase.DONE, generation, false, failure);
        }
    }

    /**
     * What a prepare holds so far, for a failed one to give back: the lease once the prepare call
     * answered, the prepared update once the steps prepared it.
     */
    private static final class Held {
        boolean leased;
        UpdateSteps.PreparedUpdate prepared;
    }

    private void execute(Instance instance, UpdateRun run, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        GroupSession session =
                new GroupSession(control, properties, instance, run.generation(), deadline);
        Update update = new Update(instance, run, timeout, deadline, session);
        Ending ending = Ending.UNDECIDED;
        try {
            ending = prepareApplyAdvance(update);
        } catch (RuntimeException e) {
            // Only bookkeeping can land here: post-apply before the engine advanced (the bytes
            // are in and agreed on), or the undoing of a failed phase. Either way the instance
            // is not known to serve the new generation, so it waits to be rebuilt.
            log.error("post-apply of {} failed", run.id(), e);
            ending = Ending.pausedForRebuild(NamedFailure.of(instance, e));
        } finally {
            // The instance's state first, so an engine that sees the outcome sees it applied.
            instances.endUpdate(instance.epoch(), ending.advanced(), ending.pause());
            finish(run, ending);
        }
    }

    /**
     * The phases in turn; the first that fails decides how the update ends. Unless its workers
     * receive in place, an update writes nothing the engine serves from until its install: a
     * failure before it resumes the old generation, as a failed prepare does, whether the engine
     * serves meanwhile (installed on request) or drained for the one call.
     */
    private Ending prepareApplyAdvance(Update update) {
        Held held = new Held();
        UpdateSteps.PreparedUpdate prepared;
        try {
            prepared = prepare(update, held);
        } catch (RuntimeException e) {
            return resumeOld(update, held, e);
        }
        boolean onRequest = update.run().installOnRequest();
        try {
            apply(update, prepared);
            update.run().fetched();
            if (onRequest) {
                awaitInstall(update);
            }
        } catch (RuntimeException e) {
            return update.instance().fetchWritesServingWeights()
                    ? pauseForRebuild(update, e)
                    : resumeOld(update, held, e);
        }
        try {
            install(update);
        } catch (RuntimeException e) {
            return pauseForRebuild(update, e);
        }
        return postApply(update);
    }

    /**
     * The engine's turn: it served through the fetch, and now drains and asks to install. One that
     * declines, or does not ask before the update's deadline, keeps its old generation.
     */
    private void awaitInstall(Update update) {
        boolean asked;
        try {
            asked = update.run().awaitInstallRequest(update.deadline());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApplyFailure(update.instance().instanceId(), "interrupted awaiting install");
        }
        if (!asked) {
            throw new ApplyFailure(
                    update.instance().instanceId(),
                    "the engine did not ask to install generation "
                            + update.generation()
                            + " before the update's deadline");
        }
        String declined = update.run().declined();
        if (declined != null) {
            throw new ApplyFailure(
                    update.instance().instanceId(),
                    "the engine declined to install generation "
                            + update.generation()
                            + ": "
                            + declined);
        }
    }

    /**
     * Install: the fetched bytes become the engine's weights. Staged direct workers' received bytes
     * are copied into the buffers the engine serves from; compat and in-place workers hold them
     * already (a compat engine loads its image once it hears UPDATED).
     */
    private void install(Update update) {
        update.run().enter(Phase.INSTALLING);
        long copied = steps.install(update.instance());
        if (copied > 0) {
            log.info("install of {} copied {} staged bytes", update.run().id(), copied);
        }
    }

    /**
     * Prepare touches nothing: the inputs (one call to control-api, which leases the generation),
     * their validation, checks and provisional registration, the store reads started ahead, then
     * the all-prepared barrier.
     */
    private UpdateSteps.PreparedUpdate prepare(Update update, Held held) {
        Instance instance = update.instance();
        UpdateRun run = update.run();
        run.enter(Phase.PREPARING);
        Laps watch = new Laps();
        PrepareInputs.Called called = inputs.call(instance, update.generation(), update.timeout());
        held.leased = true;
        // every report of this run names the session's attempt the prepare joined
        update.session().joined(called.answer().attempt());
        watch.lap("prepare-call");
        UpdateSteps.PreparedUpdate prepared = steps.prepare(inputs.request(called, watch));
        held.prepared = prepared;
        watch.lap("validate-check-register");
        run.total(prepared.bytesTotal());
        run.enter(Phase.PREPARED);
        // The store reads start now and fill staging while the others prepare: no worker buffer
        // is written before the barrier.
        prepared.readAhead(remaining(update.deadline()), run::progress);
        // Unless its workers receive in place, nothing this engine serves from is written before
        // its install, after the applied barrier: the session hears it, so a failure before then
        // ends it RESUMED_OLD as this run does.
        update.session()
                .arrive(
                        Report.prepared(
                                instance.instanceId(),
                                instance.epoch(),
                                !instance.fetchWritesServingWeights()),
                        Barrier.PREPARED);
        watch.lap("prepared-barrier");
        log.info("prepare of {}: {}", run.id(), watch);
        return prepared;
    }

    /**
     * A prepare, or a fetch that wrote nothing the engine serves from, failed: the group hears it,
     * and whatever the prepare held is given back (its reads, its provisional registrations, the
     * lease on a generation this instance does not serve). The instance stays on its generation,
     * not paused: a drained engine resumes serving it.
     */
    private Ending resumeOld(Update update, Held held, RuntimeException e) {
        Instance instance = update.instance();
        long generation = update.generation();
        NamedFailure failure = update.session().failure(e);
        update.session().reportFailed(failure);
        if (held.prepared != null) {
            // before the registrations go: its reads land in this update's staging
            held.prepared.abandon();
        }
        try {
            steps.discard();
        } catch (RuntimeException d) {
            log.warn("dropping provisional registrations failed: {}", d.toString());
        }
        if (held.leased && !Long.valueOf(generation).equals(instance.generation())) {
            releaseLease(new GenerationId(instance.model(), generation), instance.instanceId());
        }
        return Ending.resumedOld(failure);
    }

    /**
     * Apply: from here on the receive buffers may hold a mix of generations (for in-place direct
     * workers, the weights their engine serves from). The bytes move (stopped early when the
     * session failed elsewhere), what landed is proven when the writes were tallied, then the
     * applied barrier.
     */
    private void apply(Update update, UpdateSteps.PreparedUpdate prepared) {
        Instance instance = update.instance();
        UpdateRun run = update.run();
        GroupSession session = update.session();
        run.enter(Phase.APPLYING);
        // For operators only: APPLIED is taken straight from PREPARED, and an APPLYING that lands
        // after it changes nothing, so the apply does not wait a round trip.
        calls.execute(
                () -> {
                    try {
                        session.reportQuietly(Reported.APPLYING);
                    } catch (RuntimeException e) {
                        log.warn("reporting APPLYING failed: {}", e.toString());
                    }
                });
        ApplyCounts counts;
        ScheduledFuture<?> watching = session.watch(prepared, watcher);
        try {
            counts = prepared.apply(remaining(update.deadline()), run::progress);
        } finally {
            if (watching != null) {
                watching.cancel(false);
            }
        }
        run.counts(counts);
        if (counts.sent() != null) {
            proveLanded(update, prepared, counts);
        }
        run.enter(Phase.APPLIED);
        session.arrive(
                Report.applied(
                        instance.instanceId(),
                        instance.epoch(),
                        counts.bytesRead(),
                        counts.bytesPushed() + counts.bytesFannedOut(),
                        counts.bytesReceived(),
                        counts.checksums()),
                Barrier.APPLIED);
    }

    /**
     * SENT, with the digests of what this loader's writes put into each instance's buffers; once
     * every participant sent (the sent barrier), what was sent to this instance, proven against its
     * buffers as they hold the bytes. A difference throws, naming the sender, worker, buffer and
     * generation: this loader then reports FAILED instead of APPLIED, so the applied barrier never
     * opens and no engine advances.
     */
    private void proveLanded(
            Update update, UpdateSteps.PreparedUpdate prepared, ApplyCounts counts) {
        Instance instance = update.instance();
        Map<String, byte[]> sent = new TreeMap<>();
        counts.sent().forEach((to, digests) -> sent.put(to, LandedProof.encode(digests)));
        update.session()
                .arrive(Report.sent(instance.instanceId(), instance.epoch(), sent), Barrier.SENT);
        prepared.proveLanded(
                control.landed(
                        new SessionKey(
                                new GenerationId(instance.model(), update.generation()),
                                instance.group()),
                        instance.instanceId()));
    }

    /**
     * An apply into the weights the engine serves from (in-place direct workers), or an install,
     * failed: the group hears it, and the instance waits to be rebuilt.
     */
    private Ending pauseForRebuild(Update update, RuntimeException e) {
        NamedFailure failure = update.session().failure(e);
        update.session().reportFailed(failure);
        return Ending.pausedForRebuild(failure);
    }

    /** Post-apply: every loader applied, so the engine advances whatever happens next. */
    private Ending postApply(Update update) {
        update.run().enter(Phase.POST_APPLYING);
        steps.promote();
        long generation = update.generation();
        try {
            // The step that records POST_APPLIED also releases this loader's leases on the
            // model's other generations (the one it served before, and any a failed update left),
            // so the update costs no call of its own for them. It ends before the engine hears
            // UPDATED: whoever saw the outcome sees the session's reports and the leases as they
            // end.
            UpdateRun.Split split = update.run().splitSoFar();
            postApplied.send(
                    update.instance(),
                    generation,
                    update.session().attempt(),
                    new ControlPlane.Durations(
                            split.fetchMs(), split.installMs(), split.pauseMs()));
        } catch (RuntimeException e) {
            // Only post-apply bookkeeping can land here; the bytes are in and agreed on.
            log.error("post-apply of {} failed", update.run().id(), e);
            return Ending.updated(generation, NamedFailure.of(update.instance(), e));
        }
        return Ending.updated(generation, null);
    }

    private void finish(UpdateRun run, Ending ending) {
        NamedFailure failure = ending.failure();
        run.finish(
                ending.outcome(),
                ending.end(),
                failure == null ? null : failure.peer(),
                failure == null ? null : failure.message());
        metrics.finished(run.snapshot());
        if (failure == null) {
            log.info("update {} ended {}", run.id(), ending.outcome());
        } else {
            log.warn(
                    "update {} ended {}: {} ({})",
                    run.id(),
                    ending.outcome(),
                    failure.message(),
                    failure.peer());
        }
    }

    private static Duration remaining(long deadline) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new ApplyFailure(NamedFailure.CONTROL_API, "the update ran out of time");
        }
        return Duration.ofNanos(left);
    }

    private void releaseLease(GenerationId generation, String holder) {
        try {
            control.releaseLease(generation, holder);
        } catch (RuntimeException e) {
            log.warn("releasing the lease on {} failed: {}", generation.path(), e.toString());
        }
    }

    @PreDestroy
    void stop() {
        worker.shutdownNow();
        calls.shutdownNow();
        watcher.shutdownNow();
    }
}
