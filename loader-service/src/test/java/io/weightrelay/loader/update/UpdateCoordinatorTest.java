package io.weightrelay.loader.update;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.weightrelay.api.RemoteProblem;
import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.model.DirectInstall;
import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlane.GenerationState;
import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.loader.instance.DataplaneHolder;
import io.weightrelay.loader.instance.InstanceService;
import io.weightrelay.loader.pipeline.ApplyCounts;
import io.weightrelay.loader.pipeline.ApplyFailure;
import io.weightrelay.loader.pipeline.LandedProof;
import io.weightrelay.loader.pipeline.PrepareRequest;
import io.weightrelay.loader.pipeline.TestBuffers;
import io.weightrelay.loader.pipeline.WorkerBuffers;
import io.weightrelay.loader.registration.RegistrationManager;
import io.weightrelay.loader.registration.RegistrationState;
import io.weightrelay.loader.update.UpdateRun.Outcome;
import io.weightrelay.loader.update.UpdateRun.Phase;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.service.dataplane.DataplaneProperties;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.problem.RelayException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongConsumer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The update state machine against in-memory stand-ins for control-api and the data plane (both are
 * exercised for real by the multi-process test): outcomes, what is reported, what is promoted or
 * dropped, and that nothing advances or retries after a failure.
 */
class UpdateCoordinatorTest {
    private static SourceManifest manifest;
    private static TargetPlacement placement;
    private static Plan plan;

    private FakeControl control;
    private DataplaneHolder holder;

    /** Opened by a test to hold the creation of a receive segment (its page faults) midway. */
    private CountDownLatch creationGate = new CountDownLatch(0);

    private CountDownLatch creating = new CountDownLatch(1);
    private FakeSteps steps;
    private InstanceService instances;
    private UpdateCoordinator coordinator;

    @BeforeAll
    static void planTiny() {
        manifest = Fragmenter.fragment("tiny", ModelCatalog.tensors("tiny"), 256 << 10);
        placement = Placements.of(ModelCatalog.layout("tiny"), 2, 4, 2, 1, Mode.COMPAT, 1);
        plan =
                Planner.plan(
                        manifest,
                        placement,
                        Topology.uniform(2, 2, 1, 100),
                        new Planner.Options(128 << 10, 512 << 10));
    }

    @BeforeEach
    void wire() {
        control = new FakeControl();
        steps = new FakeSteps();
        LoaderProperties properties =
                new LoaderProperties(
                        "http://127.0.0.1:1",
                        "",
                        "",
                        2,
                        Duration.ofSeconds(1),
                        Duration.ofMinutes(5),
                        Duration.ofSeconds(5),
                        Duration.ZERO,
                        4,
                        -1,
                        "",
                        "",
                        true,
                        true,
                        false,
                        Duration.ofMillis(100));
        holder =
                new DataplaneHolder(
                        new DataplaneSettings(
                                DataplaneProperties.loopback("redis://127.0.0.1:6379", "wr:dp:"))) {
                    final RegistrationManager<Segment> registrations =
                            new RegistrationManager<>(
                                    new io.weightrelay.loader.registration.Registrar<>() {
                                        @Override
                                        public Segment register(
                                                io.weightrelay.loader.registration.RegistrationKey
                                                        key) {
                                            creating.countDown();
                                            try {
                                                creationGate.await();
                                            } catch (InterruptedException e) {
                                                Thread.currentThread().interrupt();
                                            }
                                            return null;
                                        }

                                        @Override
                                        public void unregister(
                                                io.weightrelay.loader.registration.RegistrationKey
                                                        key,
                                                Segment handle) {}
                                    });

                    @Override
                    public synchronized Dataplane open(String node) {
                        return null;
                    }

                    @Override
                    public synchronized RegistrationManager<Segment> registrations() {
                        return registrations;
                    }
                };
        instances = new InstanceService(control, holder, properties);
        coordinator =
                new UpdateCoordinator(
                        instances, control, steps, properties, new SimpleMeterRegistry());
        instances.register(registration());
    }

    private static InstanceRegistration registration() {
        List<WorkerPlacement> workers = new ArrayList<>();
        for (Worker w : placement.workers()) {
            if (w.instance().equals("i0000")) {
                workers.add(
                        new WorkerPlacement(
                                w.id(),
                                w.node(),
                                "nic0",
                                ConsumeMode.COMPAT,
                                List.of(
                                        new ReceiveBuffer(
                                                Worker.COMPAT_BUFFER, w.segment(), 8L << 20))));
            }
        }
        return new InstanceRegistration(
                "i0000", "tiny", "group-a", Topology.rolloutNodeName(0), workers);
    }

    /** The instance's workers as in-place direct ones: their fetch writes what they serve from. */
    private static InstanceRegistration inPlaceDirect() {
        InstanceRegistration direct = registration();
        direct.getWorkers().forEach(w -> w.setMode(ConsumeMode.DIRECT));
        return direct;
    }

    /**
     * Runs an update to {@code generation} to its end and checks how it ended, whom it blamed and
     * which steps it took.
     */
    private UpdateRun.Snapshot updateEnds(
            long generation, Outcome outcome, String failingPeer, String... calls)
            throws InterruptedException {
        UpdateRun.Snapshot s = finish(coordinator.start(generation, Duration.ofSeconds(30)));
        assertThat(s.outcome()).isEqualTo(outcome);
        assertThat(s.failingPeer()).isEqualTo(failingPeer);
        assertThat(steps.calls).containsExactly(calls);
        return s;
    }

    private UpdateRun.Snapshot finish(UpdateRun run) throws InterruptedException {
        for (int i = 0; i < 3000 && run.snapshot().outcome() == Outcome.RUNNING; i++) {
            Thread.sleep(10);
        }
        assertThat(run.snapshot().outcome()).isNotEqualTo(Outcome.RUNNING);
        while (instances.updating()) {
            Thread.sleep(5);
        }
        return run.snapshot();
    }

    private static final Map<LandedProof.Key, LandedProof.Digest> TO_I0001 =
            Map.of(
                    new LandedProof.Key("i0000", "i0001-r000", "model"),
                    new LandedProof.Digest(42, 900));

    /**
     * With SENT the loader hands control-api what its writes put into each instance's buffers; once
     * every sender sent, it proves its own buffers against what was sent to it, and only then
     * reports APPLIED.
     */
    @Test
    void aLoaderReportsWhatItSentAndProvesWhatLandedBeforeItReportsApplied() throws Exception {
        steps.sent = Map.of("i0001", TO_I0001);
        byte[] fromI0001 = LandedProof.encode(TO_I0001);
        control.landed = Map.of("i0001", fromI0001);

        UpdateRun.Snapshot s =
                updateEnds(
                        2L,
                        Outcome.UPDATED,
                        null,
                        "prepare",
                        "read-ahead",
                        "apply",
                        "prove-landed",
                        "install",
                        "promote");

        assertThat(control.phases())
                .filteredOn(p -> p != ControlPlane.Reported.APPLYING)
                .containsExactly(
                        ControlPlane.Reported.PREPARED,
                        ControlPlane.Reported.SENT,
                        ControlPlane.Reported.APPLIED,
                        ControlPlane.Reported.POST_APPLIED);
        ControlPlane.Report sent =
                control.reports.stream()
                        .filter(r -> r.phase() == ControlPlane.Reported.SENT)
                        .findFirst()
                        .orElseThrow();
        assertThat(sent.sent()).containsOnlyKeys("i0001");
        assertThat(LandedProof.decode("i0000", sent.sent().get("i0001"))).isEqualTo(TO_I0001);
        assertThat(steps.proved).containsOnlyKeys("i0001");
        assertThat(s.phase()).isEqualTo(Phase.DONE);
    }

    /**
     * A receiver whose buffers do not hold what a sender sent reports FAILED naming that sender,
     * never APPLIED: the applied barrier does not open and no engine advances; this one, whose
     * workers receive in place, pauses.
     */
    @Test
    void bytesThatDidNotLandAsSentFailTheUpdateBeforeAppliedNamingTheSender() throws Exception {
        instances.register(inPlaceDirect());
        steps.sent = Map.of("i0001", TO_I0001);
        steps.proofFailure =
                new ApplyFailure(
                        "i0001",
                        "generation 2 of tiny did not land as sent: buffer 'model' of i0000-r000"
                                + " does not hold the 900 bytes i0001 sent into it");

        UpdateRun.Snapshot s =
                updateEnds(
                        2L,
                        Outcome.PAUSED_REBUILD,
                        "i0001",
                        "prepare",
                        "read-ahead",
                        "apply",
                        "prove-landed");

        assertThat(s.error()).contains("i0000-r000").contains("'model'").contains("generation 2");
        assertThat(control.phases())
                .doesNotContain(ControlPlane.Reported.APPLIED, ControlPlane.Reported.POST_APPLIED)
                .contains(ControlPlane.Reported.SENT, ControlPlane.Reported.FAILED);
        ControlPlane.Report failed =
                control.reports.stream()
                        .filter(r -> r.phase() == ControlPlane.Reported.FAILED)
                        .findFirst()
                        .orElseThrow();
        assertThat(failed.failingPeer()).isEqualTo("i0001");
        assertThat(instances.require().generation()).isNull();
        assertThat(instances.require().paused()).isTrue();
    }

    @Test
    void anUpdateRunsTheThreePhasesAndAdvancesTheGeneration() throws Exception {
        UpdateRun.Snapshot s = finish(coordinator.start(null, Duration.ofSeconds(30)));

        assertThat(s.outcome()).isEqualTo(Outcome.UPDATED);
        assertThat(s.phase()).isEqualTo(Phase.DONE);
        assertThat(s.generation()).isEqualTo(2);
        assertThat(s.bytesDone()).isEqualTo(s.bytesTotal()).isEqualTo(1000);
        // APPLYING is reported beside the apply: anywhere after PREPARED, once.
        assertThat(control.phases())
                .filteredOn(p -> p != ControlPlane.Reported.APPLYING)
                .containsExactly(
                        ControlPlane.Reported.PREPARED,
                        ControlPlane.Reported.APPLIED,
                        ControlPlane.Reported.POST_APPLIED);
        assertThat(control.phases()).containsOnlyOnce(ControlPlane.Reported.APPLYING);
        assertThat(steps.calls)
                .containsExactly("prepare", "read-ahead", "apply", "install", "promote");
        assertThat(instances.require().generation()).isEqualTo(2);
        assertThat(control.leases).containsExactly("+2");
        assertThat(s.durationsMs())
                .containsKeys(Phase.PREPARING, Phase.APPLYING, Phase.POST_APPLYING);

        control.active = 3;
        finish(coordinator.start(null, Duration.ofSeconds(30)));
        assertThat(instances.require().generation()).isEqualTo(3);
        // No release call for generation 2: control-api releases it in the POST_APPLIED step.
        assertThat(control.leases).containsExactly("+2", "+3");
    }

    /**
     * A POST_APPLIED that does not reach control-api is sent again until it does: it is what ends
     * this loader's part of the session, records the generation it serves and releases its leases
     * on the others. Lost once, it was never sent again.
     */
    @Test
    void aPostAppliedThatDidNotReachControlApiIsSentAgainUntilItDoes() throws Exception {
        control.losePostApplied = 2;
        UpdateRun.Snapshot s = finish(coordinator.start(null, Duration.ofSeconds(30)));
        assertThat(s.outcome()).isEqualTo(Outcome.UPDATED);
        assertThat(instances.require().generation()).isEqualTo(2);

        // Sent again one heartbeat (5 s here) after each loss: the third send comes 10 s after the
        // first; the wait leaves room beyond that for a loaded machine (it ended at 10 s: racy).
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        while (!control.phases().contains(ControlPlane.Reported.POST_APPLIED)
                && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(control.losePostApplied).isZero();
        assertThat(control.phases()).containsOnlyOnce(ControlPlane.Reported.POST_APPLIED);
        ControlPlane.Report sent =
                control.reports.stream()
                        .filter(r -> r.phase() == ControlPlane.Reported.POST_APPLIED)
                        .findFirst()
                        .orElseThrow();
        assertThat(sent.epoch()).isEqualTo(instances.require().epoch());
    }

    /**
     * The objects a slice reads are checked beside the other steps of prepare: the first update
     * knows no slice before its prepare call, so they are checked once the slice is fetched; the
     * next one checks the new generation's objects of the known slice during the call.
     */
    @Test
    void theReadsOfTheKnownSliceAreCheckedBesideThePrepareCall() throws Exception {
        finish(coordinator.start(null, Duration.ofSeconds(30)));
        assertThat(steps.readsAhead).containsExactly("tiny/2:i0000");
        assertThat(steps.aheadSlice).isSameAs(steps.preparedSlice);

        control.active = 3;
        assertThat(finish(coordinator.start(null, Duration.ofSeconds(30))).outcome())
                .isEqualTo(Outcome.UPDATED);
        assertThat(steps.readsAhead).containsExactly("tiny/2:i0000", "tiny/3:i0000");
        assertThat(steps.aheadSlice).isSameAs(steps.preparedSlice);
    }

    /**
     * The group's buffers cross the wire only when their digest changed: a warm update names the
     * digest it holds and reuses its directory; a re-registration elsewhere sends them again.
     */
    @Test
    void theGroupsBuffersAreReadAgainOnlyWhenTheirDigestChanged() throws Exception {
        finish(coordinator.start(null, Duration.ofSeconds(30)));
        control.active = 3;
        assertThat(finish(coordinator.start(null, Duration.ofSeconds(30))).outcome())
                .isEqualTo(Outcome.UPDATED);
        assertThat(control.bufferReads).isEqualTo(1);

        control.buffersVersion++;
        control.active = 4;
        assertThat(finish(coordinator.start(null, Duration.ofSeconds(30))).outcome())
                .isEqualTo(Outcome.UPDATED);
        assertThat(control.bufferReads).isEqualTo(2);
        assertThat(instances.require().generation()).isEqualTo(4);
    }

    /**
     * The engine's registration creates its workers' receive segments and the loader's read staging
     * before it answers, for good (a failed prepare keeps them), so its first update reuses them
     * instead of paying for them.
     */
    @Test
    void registrationCreatesTheReceiveSegmentsAndTheFirstUpdateReusesThem() throws Exception {
        List<String> segments = new ArrayList<>();
        for (WorkerPlacement w : registration().getWorkers()) {
            segments.add(w.getBuffers().get(0).getSegment());
        }
        segments.add("staging-i0000");
        assertThat(holder.registrations().snapshot())
                .extracting(x -> x.key().base())
                .containsExactlyElementsOf(segments);
        assertThat(holder.registrations().snapshot())
                .extracting(RegistrationManager.Snapshot::state)
                .containsOnly(RegistrationState.PERSISTENT);
        assertThat(holder.registrations().stats().registered()).isEqualTo(segments.size());
    }

    /**
     * While a registration creates (and page-faults) its buffers, the heartbeat still reads the
     * instance: a slow creation never starves the loader's membership in control-api's registry.
     */
    @Test
    void aSlowBufferCreationNeverHoldsUpTheHeartbeat() throws Exception {
        creationGate = new CountDownLatch(1);
        creating = new CountDownLatch(1);
        Thread registering = new Thread(() -> instances.register(registration()));
        registering.start();
        try {
            assertThat(creating.await(10, TimeUnit.SECONDS)).isTrue();
            CompletableFuture<Boolean> beat =
                    CompletableFuture.supplyAsync(() -> instances.current().isPresent());
            assertThat(beat.get(5, TimeUnit.SECONDS)).isTrue();
            assertThat(registering.isAlive()).as("still creating its buffers").isTrue();
        } finally {
            creationGate.countDown();
            registering.join(10_000);
        }
        assertThat(registering.isAlive()).isFalse();
    }

    /**
     * Redis lost its data: control-api forgot the loader and its epoch counter started again. The
     * heartbeat's re-registration takes a new (lower) epoch and keeps what the engine holds, and
     * the next update reports with the new epoch.
     */
    @Test
    void registeringAgainAfterRedisLostItsDataKeepsTheHeldGenerationAndTakesTheNewEpoch()
            throws Exception {
        finish(coordinator.start(null, Duration.ofSeconds(30)));
        assertThat(instances.require().generation()).isEqualTo(2);
        control.epoch = 0;

        control.leases.clear();
        assertThat(instances.registerAgain()).isEqualTo(1);
        assertThat(instances.require().epoch()).isEqualTo(1);
        assertThat(instances.require().generation()).as("what the engine holds").isEqualTo(2);
        assertThat(instances.require().paused()).isFalse();
        assertThat(control.leases)
                .as("the registration dropped the loader's leases; the one it serves is held again")
                .containsExactly("+2");

        control.active = 3;
        control.reports.clear();
        UpdateRun.Snapshot s = finish(coordinator.start(null, Duration.ofSeconds(30)));
        assertThat(s.outcome()).isEqualTo(Outcome.UPDATED);
        assertThat(control.reports).allMatch(r -> r.epoch() == 1);
        assertThat(instances.require().generation()).isEqualTo(3);
    }

    /** Waits until {@code run} stops at FETCHED for the engine's install call. */
    private static UpdateRun.Snapshot fetched(UpdateRun run) throws InterruptedException {
        UpdateRun.Snapshot s = run.awaitOutcome(Duration.ofSeconds(30));
        assertThat(s.phase()).isEqualTo(Phase.FETCHED);
        assertThat(s.outcome()).isEqualTo(Outcome.RUNNING);
        return s;
    }

    /**
     * An engine serving through the fetch: the update stops once every loader fetched and verified
     * (the applied barrier), installs nothing and advances nothing until the engine asks, and its
     * pause is the install alone.
     */
    @Test
    void anUpdateInstalledOnRequestWaitsAtFetchedUntilTheEngineAsks() throws Exception {
        steps.applyMillis = 400;
        UpdateRun run = coordinator.start(null, Duration.ofSeconds(30), true);

        UpdateRun.Snapshot waiting = fetched(run);
        Thread.sleep(200);
        assertThat(run.snapshot().phase()).isEqualTo(Phase.FETCHED);
        assertThat(steps.calls).containsExactly("prepare", "read-ahead", "apply");
        assertThat(control.phases())
                .contains(ControlPlane.Reported.APPLIED)
                .doesNotContain(ControlPlane.Reported.POST_APPLIED);
        assertThat(instances.require().generation()).isNull();
        assertThat(waiting.split().fetchMs()).isGreaterThanOrEqualTo(400);

        coordinator.install(run.id());
        UpdateRun.Snapshot s = finish(run);
        assertThat(s.outcome()).isEqualTo(Outcome.UPDATED);
        assertThat(steps.calls)
                .containsExactly("prepare", "read-ahead", "apply", "install", "promote");
        assertThat(instances.require().generation()).isEqualTo(2);
        assertThat(s.split().pauseMs())
                .as("the pause is the install, not the fetch nor the engine's wait")
                .isEqualTo(s.split().installMs())
                .isLessThan(s.split().fetchMs());
    }

    /** The one-call update installs as soon as the group fetched, and its pause is all of it. */
    @Test
    void anUpdateInOneCallInstallsAtOnceAndIsPausedThroughout() throws Exception {
        steps.applyMillis = 200;
        UpdateRun.Snapshot s = finish(coordinator.start(null, Duration.ofSeconds(30)));
        assertThat(s.outcome()).isEqualTo(Outcome.UPDATED);
        assertThat(steps.calls)
                .containsExactly("prepare", "read-ahead", "apply", "install", "promote");
        assertThat(s.split().pauseMs()).isGreaterThanOrEqualTo(s.split().fetchMs());
        assertThatThrownBy(() -> coordinator.install(s.id()))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("installs with the update");
    }

    /** Asking to install before the group fetched is refused; the update goes on. */
    @Test
    void anInstallAskedBeforeTheFetchEndedIsRefused() throws Exception {
        steps.applyMillis = 1000;
        UpdateRun run = coordinator.start(null, Duration.ofSeconds(30), true);
        assertThatThrownBy(() -> coordinator.install(run.id()))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("not FETCHED");
        fetched(run);
        coordinator.install(run.id());
        assertThat(finish(run).outcome()).isEqualTo(Outcome.UPDATED);
    }

    /**
     * A fetch that fails while the engine serves leaves it serving its old generation, never
     * paused: its fetch wrote nothing it serves from. The group hears the failure; the lease is
     * given back. (In-place direct workers, whose fetch writes what they serve from, would pause.)
     */
    @Test
    void aFetchThatFailsBeforeAnInstallOnRequestResumesTheOldGenerationUnpaused() throws Exception {
        steps.applyFailure = new ApplyFailure("i0001", "i0001 stopped pushing");
        UpdateRun.Snapshot s = finish(coordinator.start(2L, Duration.ofSeconds(30), true));

        assertThat(s.outcome()).isEqualTo(Outcome.RESUMED_OLD);
        assertThat(s.failingPeer()).isEqualTo("i0001");
        assertThat(s.split().pauseMs()).isZero();
        assertThat(steps.calls).doesNotContain("install", "promote");
        assertResumedTheOldGenerationUnpaused();
        // The session hears with PREPARED that this engine serves through the fetch, so that it
        // too ends RESUMED_OLD, not PAUSED_REBUILD.
        assertThat(prepared().servesThroughFetch()).isTrue();
    }

    /**
     * A one-call update of compat workers also writes nothing the engine serves from before its
     * install: its PREPARED says so, as an update installed on request does.
     */
    @Test
    void aOneCallCompatUpdateTellsTheSessionItsOldGenerationOutlivesTheFetch() throws Exception {
        assertThat(finish(coordinator.start(2L, Duration.ofSeconds(30))).outcome())
                .isEqualTo(Outcome.UPDATED);
        assertThat(prepared().servesThroughFetch()).isTrue();
    }

    /** In-place direct workers' fetch writes what their engine serves: their PREPARED says not. */
    @Test
    void anInPlaceDirectUpdateDoesNotTellTheSessionItsOldGenerationOutlivesTheFetch()
            throws Exception {
        instances.register(inPlaceDirect());
        assertThat(finish(coordinator.start(2L, Duration.ofSeconds(30))).outcome())
                .isEqualTo(Outcome.UPDATED);
        assertThat(prepared().servesThroughFetch()).isFalse();
    }

    /**
     * A one-call update of compat workers (the engine drained before it called) whose fetch fails
     * after the prepared barrier: the fetch received into the image, apart from the engine's
     * weights, so the engine resumes its old generation (RESUMED_OLD, not paused, the lease given
     * back) and the next update runs without a rebuild.
     */
    @Test
    void aOneCallCompatFetchThatFailsResumesTheOldGenerationUnpaused() throws Exception {
        steps.applyFailure = new ApplyFailure("i0001", "i0001 stopped pushing");
        UpdateRun.Snapshot s =
                updateEnds(
                        2L,
                        Outcome.RESUMED_OLD,
                        "i0001",
                        "prepare",
                        "read-ahead",
                        "apply",
                        "abandon",
                        "discard");

        assertThat(s.phase()).isEqualTo(Phase.RESUMED_OLD);
        assertResumedTheOldGenerationUnpaused();
        assertThat(prepared().servesThroughFetch()).isTrue();

        steps.applyFailure = null;
        steps.calls.clear();
        assertThat(finish(coordinator.start(2L, Duration.ofSeconds(30))).outcome())
                .as("no rebuild before the next update")
                .isEqualTo(Outcome.UPDATED);
        assertThat(instances.require().generation()).isEqualTo(2);
    }

    /**
     * Staged direct workers receive into the loader's own copy; the weights their engine serves
     * from are written only at install. A one-call update whose session fails during the apply
     * resumes the old generation.
     */
    @Test
    void aOneCallStagedFetchThatFailsResumesTheOldGeneration() throws Exception {
        instances.register(inPlaceDirect().directInstall(DirectInstall.STAGED));
        anotherLoaderFailsAt(
                ControlPlane.Barrier.APPLIED,
                "i0001",
                Outcome.RESUMED_OLD,
                "prepare",
                "read-ahead",
                "apply",
                "abandon",
                "discard");
        assertThat(instances.require().paused()).isFalse();
        assertThat(instances.require().generation()).isNull();
    }

    /** The PREPARED report this loader sent. */
    private ControlPlane.Report prepared() {
        synchronized (control.reports) {
            return control.reports.stream()
                    .filter(r -> r.phase() == ControlPlane.Reported.PREPARED)
                    .findFirst()
                    .orElseThrow();
        }
    }

    /**
     * An engine that cannot take a fetched update (SGLang refusing to open its weight-update
     * session, say) declines it: the update ends RESUMED_OLD at once, long before its deadline,
     * naming the engine's reason; the group hears FAILED; the engine was never paused and keeps its
     * old generation. Neither an install nor a second decline is taken afterwards.
     */
    @Test
    void anEngineThatDeclinesAFetchedUpdateKeepsItsOldGenerationAtOnce() throws Exception {
        UpdateRun run = coordinator.start(2L, Duration.ofSeconds(300), true);
        fetched(run);
        long declinedAt = System.nanoTime();
        coordinator.decline(run.id(), "SGLang refused begin_weight_update: a session is open");
        UpdateRun.Snapshot s = finish(run);

        assertThat(Duration.ofNanos(System.nanoTime() - declinedAt))
                .as("the decline ends the update, not its 300 s deadline")
                .isLessThan(Duration.ofSeconds(30));
        assertThat(s.outcome()).isEqualTo(Outcome.RESUMED_OLD);
        assertThat(s.error())
                .contains("declined to install generation 2")
                .contains("SGLang refused begin_weight_update: a session is open");
        assertThat(s.split().pauseMs()).isZero();
        assertThat(steps.calls).doesNotContain("install", "promote");
        assertResumedTheOldGenerationUnpaused();
        assertThatThrownBy(() -> coordinator.install(run.id()))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("declined");
        assertThatThrownBy(() -> coordinator.decline(run.id(), "again"))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("declined");
    }

    /** Only an update waiting at FETCHED can be declined; one still fetching goes on. */
    @Test
    void aDeclineBeforeTheFetchEndedOrOfAOneCallUpdateIsRefused() throws Exception {
        steps.applyMillis = 1000;
        UpdateRun run = coordinator.start(null, Duration.ofSeconds(30), true);
        assertThatThrownBy(() -> coordinator.decline(run.id(), null))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("not FETCHED");
        fetched(run);
        coordinator.install(run.id());
        assertThatThrownBy(() -> coordinator.decline(run.id(), null))
                .isInstanceOf(RelayException.class)
                .hasMessageMatching(".*(installing already|not FETCHED).*");
        assertThat(finish(run).outcome()).isEqualTo(Outcome.UPDATED);

        UpdateRun.Snapshot oneCall = finish(coordinator.start(null, Duration.ofSeconds(30)));
        assertThatThrownBy(() -> coordinator.decline(oneCall.id(), "late"))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("installs with the update");
        assertThatThrownBy(() -> coordinator.decline("no-such-update", null))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("no update no-such-update");
    }

    /** An engine that never asks to install keeps its old generation once the update times out. */
    @Test
    void anEngineThatNeverAsksToInstallKeepsItsOldGeneration() throws Exception {
        UpdateRun.Snapshot s = finish(coordinator.start(2L, Duration.ofSeconds(2), true));
        assertThat(s.outcome()).isEqualTo(Outcome.RESUMED_OLD);
        assertThat(s.error()).contains("did not ask to install generation 2");
        assertThat(steps.calls).doesNotContain("install", "promote");
        assertThat(instances.require().paused()).isFalse();
        assertThat(instances.require().generation()).isNull();
    }

    /**
     * In-place direct workers receive into the weights their engine serves from: such an instance
     * cannot serve through a fetch, so installing on request is refused before anything starts; a
     * staged one may.
     */
    @Test
    void installOnRequestIsRefusedForInPlaceDirectWorkersAndTakenForStaged() throws Exception {
        InstanceRegistration direct = registration();
        direct.getWorkers().forEach(w -> w.setMode(ConsumeMode.DIRECT));
        instances.register(direct);
        assertThatThrownBy(() -> coordinator.start(2L, Duration.ofSeconds(30), true))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("in-place direct workers");
        assertThat(instances.updating()).isFalse();

        instances.register(direct.directInstall(DirectInstall.STAGED));
        UpdateRun run = coordinator.start(2L, Duration.ofSeconds(30), true);
        fetched(run);
        coordinator.install(run.id());
        assertThat(finish(run).outcome()).isEqualTo(Outcome.UPDATED);
    }

    @Test
    void aMissingObjectAtPrepareResumesTheOldGenerationAndNamesTheObject() throws Exception {
        steps.prepareFailure =
                new ApplyFailure("tiny/2/f3", "object tiny/2/f3 is not in the store");

        UpdateRun.Snapshot s =
                updateEnds(2L, Outcome.RESUMED_OLD, "tiny/2/f3", "prepare", "discard");

        assertThat(s.phase()).isEqualTo(Phase.RESUMED_OLD);
        assertThat(control.reports.get(0).phase()).isEqualTo(ControlPlane.Reported.FAILED);
        assertThat(control.reports.get(0).failingPeer()).isEqualTo("tiny/2/f3");
        assertThat(instances.require().generation()).isNull();
        assertThat(instances.require().paused()).isFalse();
        assertThat(control.leases).containsExactly("+2", "-2");
    }

    @Test
    void anotherLoaderFailingToPrepareResumesEveryoneOnTheOldGeneration() throws Exception {
        anotherLoaderFailsAt(
                ControlPlane.Barrier.PREPARED,
                "i0003",
                Outcome.RESUMED_OLD,
                "prepare",
                "read-ahead",
                "abandon",
                "discard");

        assertThat(instances.require().paused()).isFalse();
    }

    @Test
    void aReportRefusedBecauseAnotherLoaderEndedTheSessionCarriesTheSessionsFailure()
            throws Exception {
        // i0003 found a dead segment owner and ended the session before this loader's PREPARED
        control.refuseReports =
                new ControlPlaneException(
                        "report PREPARED of i0000: control-api answered 409",
                        new RemoteProblem(
                                409,
                                "session-closed",
                                null,
                                "the session already ended in state RESUMED_OLD",
                                null),
                        null);
        control.barriers.put(
                ControlPlane.Barrier.PREPARED,
                new ControlPlane.BarrierState(
                        false, true, "i0003", "owner of segment 'seg-1' is gone [PEER_GONE]"));

        UpdateRun.Snapshot s = finish(coordinator.start(2L, Duration.ofSeconds(30)));

        assertThat(s.outcome()).isEqualTo(Outcome.RESUMED_OLD);
        assertThat(s.failingPeer()).isEqualTo("i0003");
        assertThat(s.error())
                .contains("the session ended before this loader's report")
                .contains("owner of segment 'seg-1' is gone");
        assertThat(instances.require().paused()).isFalse();
    }

    /**
     * A session that ended RESUMED_OLD is retried by the group as its next attempt: every report of
     * the run, POST_APPLIED and the APPLYING sent aside included, names the attempt its prepare
     * joined, so control-api never applies it to another one.
     */
    @Test
    void everyReportOfAnUpdateNamesTheAttemptOfTheSessionItsPrepareJoined() throws Exception {
        control.attempt = 2;

        UpdateRun.Snapshot s = finish(coordinator.start(2L, Duration.ofSeconds(30)));

        assertThat(s.outcome()).isEqualTo(Outcome.UPDATED);
        assertThat(control.phases())
                .contains(
                        ControlPlane.Reported.PREPARED,
                        ControlPlane.Reported.APPLIED,
                        ControlPlane.Reported.POST_APPLIED);
        synchronized (control.reports) {
            assertThat(control.reports).allSatisfy(r -> assertThat(r.attempt()).isEqualTo(2));
        }
    }

    /**
     * A report of an attempt that ended (the group retried the session meanwhile) is refused naming
     * both attempts: the run fails with control-api's own words, not as if the failure of the
     * session it looks up now were its cause, and its FAILED names its own attempt.
     */
    @Test
    void aReportOfAnAttemptThatEndedFailsTheRunWithControlApisWords() throws Exception {
        control.attempt = 1;
        String detail =
                "the report of loader i0000 is for attempt 1 of the session of group g, which"
                        + " ended; the session is on attempt 2 now (PREPARING)";
        control.refuseReports =
                new ControlPlaneException(
                        "report PREPARED of i0000: control-api answered 409 " + detail,
                        new RemoteProblem(
                                409,
                                "session-closed",
                                null,
                                detail,
                                "{\"type\":\"session-closed\",\"detail\":\""
                                        + detail
                                        + "\",\"attempt\":1,\"currentAttempt\":2}"),
                        null);
        control.barriers.put(
                ControlPlane.Barrier.PREPARED,
                new ControlPlane.BarrierState(false, true, "i0003", "an earlier failure"));

        UpdateRun.Snapshot s = finish(coordinator.start(2L, Duration.ofSeconds(30)));

        assertThat(s.outcome()).isEqualTo(Outcome.RESUMED_OLD);
        assertThat(s.failingPeer()).isEqualTo(NamedFailure.CONTROL_API);
        assertThat(s.error()).contains("attempt 1").contains("attempt 2");
        assertThat(s.error()).doesNotContain("the session ended before this loader's report");
        synchronized (control.reports) {
            assertThat(control.reports)
                    .singleElement()
                    .satisfies(
                            r -> {
                                assertThat(r.phase()).isEqualTo(ControlPlane.Reported.FAILED);
                                assertThat(r.attempt()).isEqualTo(1);
                            });
        }
    }

    @Test
    void aGenerationThatIsNotCommittedIsFencedAtPrepare() throws Exception {
        control.states.put(4L, GenerationState.OPEN);

        updateEnds(4L, Outcome.RESUMED_OLD, "tiny/4", "discard");
    }

    /**
     * In-place direct workers receive into the weights their engine serves from: a failed apply may
     * have left a mix there, so the instance pauses until it is rebuilt.
     */
    @Test
    void aFailureDuringApplyPausesForRebuildAndIsNeverRetriedInPlace() throws Exception {
        instances.register(inPlaceDirect());
        steps.applyFailure =
                new ApplyFailure("i0002-r001", "write to i0002-r001 failed: peer gone");

        updateEnds(2L, Outcome.PAUSED_REBUILD, "i0002-r001", "prepare", "read-ahead", "apply");
        assertThat(instances.require().paused()).isTrue();
        assertThat(instances.require().generation()).isNull();
        assertThatThrownBy(() -> coordinator.start(2L, Duration.ofSeconds(30)))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("no in-place retry");

        // A rebuild is a re-registration: a new epoch, and updates run again.
        instances.register(inPlaceDirect());
        assertThat(instances.require().paused()).isFalse();
    }

    @Test
    void whenAnotherLoaderFailsDuringApplyNoInstanceAdvances() throws Exception {
        instances.register(inPlaceDirect());
        anotherLoaderFailsAt(
                ControlPlane.Barrier.APPLIED,
                "i0001",
                Outcome.PAUSED_REBUILD,
                "prepare",
                "read-ahead",
                "apply");

        assertThat(instances.require().generation()).isNull();
        assertThat(instances.require().paused()).isTrue();
    }

    /**
     * A loader that died after every byte moved is found by no transfer, only by its missing
     * report: a loader whose own deadline passes at the barrier names the instances control-api
     * says have not arrived, not control-api.
     */
    @Test
    void aBarrierThatOutlivesTheDeadlineNamesWhoDidNotArrive() throws Exception {
        instances.register(inPlaceDirect());
        control.barriers.put(
                ControlPlane.Barrier.APPLIED,
                new ControlPlane.BarrierState(false, false, null, null, List.of("i0003", "i0001")));

        UpdateRun.Snapshot s = finish(coordinator.start(2L, Duration.ofMillis(800)));

        assertThat(s.outcome()).isEqualTo(Outcome.PAUSED_REBUILD);
        assertThat(s.failingPeer()).isEqualTo("i0003");
        assertThat(s.error())
                .contains("barrier applied did not open in time")
                .contains("no report from i0003, i0001");
    }

    /**
     * An apply that ends after the update's deadline still reports and looks at the barrier once,
     * so the run names who kept it shut, not control-api for the time.
     */
    @Test
    void anApplyThatEndsAfterTheDeadlineStillNamesWhoDidNotArrive() throws Exception {
        instances.register(inPlaceDirect());
        steps.applyMillis = 1200;
        control.barriers.put(
                ControlPlane.Barrier.APPLIED,
                new ControlPlane.BarrierState(false, false, null, null, List.of("i0001")));

        UpdateRun.Snapshot s = finish(coordinator.start(2L, Duration.ofMillis(800)));

        assertThat(s.outcome()).isEqualTo(Outcome.PAUSED_REBUILD);
        assertThat(s.failingPeer()).isEqualTo("i0001");
        assertThat(s.error()).contains("no report from i0001");
    }

    /**
     * Another loader fails the session while this one applies, waiting for bytes that will not
     * come: the session watch stops the apply within its interval, naming the session's failing
     * peer and its reason, instead of the apply waiting out its deadline.
     */
    @Test
    void aSessionThatFailsElsewhereStopsTheApplyNamingItsFailingPeer() throws Exception {
        instances.register(inPlaceDirect());
        steps.applyWaitsForStop = true;
        control.barriers.put(
                ControlPlane.Barrier.APPLIED,
                new ControlPlane.BarrierState(
                        false, true, "i0003", "read of tiny/2/w@0 from trainer-0001 timed out"));
        long started = System.nanoTime();

        UpdateRun.Snapshot s = finish(coordinator.start(2L, Duration.ofSeconds(60)));

        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(5000);
        assertThat(s.outcome()).isEqualTo(Outcome.PAUSED_REBUILD);
        assertThat(s.failingPeer()).isEqualTo("i0003");
        assertThat(s.error())
                .contains("the update session failed while this loader applied")
                .contains("timed out");
        assertThat(instances.require().paused()).isTrue();
    }

    /**
     * Runs an update of generation 2 in which loader {@code peer} fails the session at {@code
     * barrier}; the run names that loader.
     */
    private void anotherLoaderFailsAt(
            ControlPlane.Barrier barrier, String peer, Outcome outcome, String... calls)
            throws InterruptedException {
        control.barriers.put(barrier, new ControlPlane.BarrierState(false, true, peer));
        updateEnds(2L, outcome, peer, calls);
    }

    /** control-api in memory: generations 1..4, the tiny plan, scripted barriers. */
    static final class FakeControl implements ControlPlane {
        long active = 2;
        long epoch;
        final Map<Long, GenerationState> states = new HashMap<>();
        final Map<Barrier, BarrierState> barriers = new EnumMap<>(Barrier.class);
        // Written by the update thread and by its call thread (APPLYING).
        final List<Report> reports = Collections.synchronizedList(new ArrayList<>());
        final List<String> leases = Collections.synchronizedList(new ArrayList<>());
        int buffersVersion;
        int bufferReads;

        /** The session's attempt a prepare joins (null: as a control-api that counts none). */
        Integer attempt;

        RuntimeException refuseReports;

        /** How many POST_APPLIED reports still get no answer, as when control-api is away. */
        int losePostApplied;

        List<Reported> phases() {
            synchronized (reports) {
                return reports.stream().map(Report::phase).toList();
            }
        }

        @Override
        public long registerLoader(InstanceRegistration registration) {
            return ++epoch;
        }

        @Override
        public void heartbeatLoader(String instance) {}

        @Override
        public void deregisterLoader(String instance) {}

        @Override
        public GenerationRef activeGeneration(String model) {
            return generation(active);
        }

        private GenerationRef generation(long generation) {
            return new GenerationRef(
                    generation,
                    states.getOrDefault(generation, GenerationState.ACTIVE),
                    manifest.digest());
        }

        @Override
        public SourceManifest manifest(GenerationId generation) {
            return manifest;
        }

        @Override
        public Slice slice(String planId, String instance) {
            return Slice.of(plan, instance);
        }

        /** As control-api: refuses a generation that is not committed, takes the lease last. */
        @Override
        public Preparation prepare(ControlPlane.PrepareCall call) {
            long generation = call.generation();
            GenerationRef g = generation(generation);
            if (!g.state().loadable()) {
                throw new ControlPlaneException(
                        "prepare: control-api answered 409",
                        new RemoteProblem(
                                409,
                                "generation-not-committed",
                                null,
                                "generation " + generation + " is " + g.state(),
                                null),
                        null);
            }
            leases.add("+" + generation);
            String digest = "buffers-" + buffersVersion;
            return new Preparation(
                    g,
                    new PlanRef("p", true, placement.instances()),
                    digest,
                    digest.equals(call.knownBuffersDigest()) ? List.of() : groupBuffers(),
                    attempt);
        }

        private List<WorkerBuffers> groupBuffers() {
            bufferReads++;
            return TestBuffers.compatImages(placement, 8L << 20);
        }

        @Override
        public synchronized void report(SessionKey session, Report r) {
            if (refuseReports != null && r.phase() != ControlPlane.Reported.FAILED) {
                throw refuseReports;
            }
            if (r.phase() == ControlPlane.Reported.POST_APPLIED && losePostApplied > 0) {
                losePostApplied--;
                throw new ControlPlaneException(
                        "report POST_APPLIED: control-api unreachable: Connection refused", null);
            }
            reports.add(r);
        }

        @Override
        public BarrierState awaitBarrier(SessionKey session, Barrier barrier, Duration wait) {
            BarrierState s = barriers.getOrDefault(barrier, new BarrierState(true, false, null));
            if (!s.open() && !s.failed()) {
                try {
                    // as a long poll that ran out
                    Thread.sleep(Math.min(wait.toMillis(), 20));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return s;
        }

        /** What the senders' SENT reports handed this instance. */
        Map<String, byte[]> landed = Map.of();

        @Override
        public Map<String, byte[]> landed(SessionKey session, String instance) {
            return landed;
        }

        @Override
        public void releaseLease(GenerationId generation, String holder) {
            leases.add("-" + generation.generation());
        }

        @Override
        public void acquireLease(GenerationId generation, String holder, Duration ttl) {
            leases.add("+" + generation.generation());
        }
    }

    /** The data-plane steps, scripted. */
    static final class FakeSteps implements UpdateSteps {
        final List<String> calls = new ArrayList<>();
        final List<String> readsAhead = new ArrayList<>();
        Slice aheadSlice;
        Slice preparedSlice;
        RuntimeException prepareFailure;
        RuntimeException applyFailure;
        // The apply runs until stopped (for 10 s at most), as one waiting for a peer's bytes.
        boolean applyWaitsForStop;
        // How long the apply takes.
        long applyMillis;
        // What the apply's writes sent, by destination instance (null: checksums off).
        Map<String, Map<LandedProof.Key, LandedProof.Digest>> sent;
        // What proving the landed bytes was handed, and the failure it finds.
        Map<String, byte[]> proved;
        RuntimeException proofFailure;
        final CompletableFuture<ApplyFailure> stopped = new CompletableFuture<>();

        @Override
        public void checkReadsAhead(GenerationId generation, Slice slice) {
            readsAhead.add(generation.path() + ":" + slice.instance());
            aheadSlice = slice;
        }

        @Override
        public long install(io.weightrelay.loader.instance.Instance instance) {
            calls.add("install");
            return 0;
        }

        @Override
        public PreparedUpdate prepare(PrepareRequest request) {
            calls.add("prepare");
            preparedSlice = request.slice();
            assertThat(request.workers()).containsExactly("i0000-r000", "i0000-r001");
            if (prepareFailure != null) {
                throw prepareFailure;
            }
            return new PreparedUpdate() {
                @Override
                public long bytesTotal() {
                    return 1000;
                }

                private boolean readingAhead;

                @Override
                public void readAhead(Duration timeout, LongConsumer progress) {
                    calls.add("read-ahead");
                    readingAhead = true;
                }

                @Override
                public void abandon() {
                    if (readingAhead) {
                        calls.add("abandon");
                    }
                }

                @Override
                public void stop(ApplyFailure why) {
                    stopped.complete(why);
                }

                @Override
                public ApplyCounts apply(Duration timeout, LongConsumer progress) {
                    calls.add("apply");
                    if (applyFailure != null) {
                        throw applyFailure;
                    }
                    if (applyMillis > 0) {
                        try {
                            Thread.sleep(applyMillis);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    if (applyWaitsForStop) {
                        try {
                            throw stopped.get(10, TimeUnit.SECONDS);
                        } catch (InterruptedException | ExecutionException | TimeoutException e) {
                            throw new AssertionError("the apply was never stopped", e);
                        }
                    }
                    progress.accept(1000);
                    return new ApplyCounts(400, 500, 100, 900, 3, null, null, 0, sent, 0, 0);
                }

                @Override
                public long proveLanded(Map<String, byte[]> handed) {
                    calls.add("prove-landed");
                    proved = handed;
                    if (proofFailure != null) {
                        throw proofFailure;
                    }
                    return 900;
                }
            };
        }

        @Override
        public void promote() {
            calls.add("promote");
        }

        @Override
        public void discard() {
            calls.add("discard");
        }
    }

    /**
     * The update reported FAILED, never POST_APPLIED; the instance is not paused, keeps no new
     * generation, and gave generation 2's lease back.
     */
    private void assertResumedTheOldGenerationUnpaused() {
        assertThat(control.phases())
                .contains(ControlPlane.Reported.FAILED)
                .doesNotContain(ControlPlane.Reported.POST_APPLIED);
        assertThat(instances.require().paused()).isFalse();
        assertThat(instances.require().generation()).isNull();
        assertThat(control.leases).containsExactly("+2", "-2");
    }
}
