package io.weightrelay.control.update;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.PhaseDurations;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.StoredFragment;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.BarrierStatus;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.LandedDigests;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.RegisteredObject;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SentDigests;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.SharedTestStore;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.RangeChecksums;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import tools.jackson.databind.JsonNode;

/** Update sessions: barriers, failure states, phase timeouts and the barrier long-poll. */
class UpdateSessionTest extends ControlApiTestSupport {

    @Autowired MeterRegistry meters;

    /** A segment owner holding the objects of the tests whose readers' checksums are disputed. */
    @RegisterExtension static final SharedTestStore store = new SharedTestStore(STORE_PREFIX);

    /** The group whose session every test drives. */
    private static final String GROUP = "grp";

    /** The model of this test: a new one per test. */
    private final String model = newModel();

    /** The epoch each instance's latest registration returned. */
    private final Map<String, Long> epochs = new HashMap<>();

    /** The plan each generation's session was started on. */
    private final Map<Long, String> planIds = new HashMap<>();

    /** Registers {@code instance} as a loader of {@link #GROUP}; returns its new epoch. */
    private long registerInGroup(String instance) {
        Loader loader = registerLoader(instance, compatLoader(model, GROUP, "r-" + instance, 1));
        epochs.put(instance, loader.getEpoch());
        return loader.getEpoch();
    }

    /** The session of {@link #GROUP} for {@code generation}. */
    private String session(long generation) {
        return sessionPath(model, generation, GROUP);
    }

    private UpdateSession start(long generation, int timeout, String... instances) {
        for (String instance : instances) {
            registerInGroup(instance);
        }
        planIds.put(generation, resolvePlan(model, generation, GROUP).getPlanId());
        UpdateSessionRequest request =
                new UpdateSessionRequest(List.of(instances), planIds.get(generation));
        request.setPhaseTimeoutSeconds(timeout);
        return join(generation, request);
    }

    /** A request to join the session of {@code generation} again, on the plan it started on. */
    private UpdateSessionRequest again(long generation, String... instances) {
        return new UpdateSessionRequest(List.of(instances), planIds.get(generation));
    }

    /**
     * {@code report} with the range checksums of everything the plan has its loader read, read
     * right: what a loader sends with APPLIED.
     */
    private PhaseReport readRight(long generation, PhaseReport report) {
        if (report.getPhase() == ReportedPhase.APPLIED) {
            List<RangeChecksums.Entry> read =
                    plannedReads(planIds.get(generation), Crc32c.parse("crc32c:0badf00d"))
                            .getOrDefault(report.getInstance(), List.of());
            report.setChecksums(new RangeChecksums(read).encode());
        }
        return report;
    }

    /** Publishes generation 1 and starts its session with {@code instances}; returns it. */
    private long publishedAndStarted(int timeout, String... instances) {
        long g = publish(model, 1);
        start(g, timeout, instances);
        return g;
    }

    private HttpResponse<String> report(long generation, String instance, ReportedPhase phase) {
        PhaseReport report = new PhaseReport(instance, phase);
        report.setEpoch(epochs.getOrDefault(instance, 1L));
        report.setBytesRead(1000L);
        report.setBytesReceived(2000L);
        if (phase == ReportedPhase.FAILED) {
            report.setError("read of m/1/x@0 returned 12 of 4096 bytes");
            report.setFailingPeer("seg-t1");
        }
        return send(generation, readRight(generation, report));
    }

    /**
     * A report by {@code instance} of {@code phase} carrying {@code epoch} ({@code null}: none).
     */
    private static PhaseReport phaseReport(String instance, ReportedPhase phase, Long epoch) {
        PhaseReport report = new PhaseReport(instance, phase);
        report.setEpoch(epoch);
        return report;
    }

    /** Sends {@code report} as it is to the session. */
    private HttpResponse<String> send(long g, PhaseReport report) {
        return call("POST", session(g) + "/reports", LOADER, report);
    }

    /** A report the session accepts, and the session after it. */
    private UpdateSession reported(long g, String instance, ReportedPhase phase) {
        return ok(report(g, instance, phase), UpdateSession.class);
    }

    /** Accepted reports of {@code phase} by each of {@code instances}, in turn. */
    private void reportedByEach(long g, ReportedPhase phase, String... instances) {
        for (String instance : instances) {
            reported(g, instance, phase);
        }
    }

    /** Both of "a" and "b" prepared, "a" reached {@code applyPhase}, then "b" failed. */
    private UpdateSession bFailedOnceApplyBegan(long g, ReportedPhase applyPhase) {
        reportedByEach(g, ReportedPhase.PREPARED, "a", "b");
        reported(g, "a", applyPhase);
        return reported(g, "b", ReportedPhase.FAILED);
    }

    /** Joins (or starts) the session with {@code request}. */
    private UpdateSession join(long g, UpdateSessionRequest request) {
        return ok(call("PUT", session(g), LOADER, request), UpdateSession.class);
    }

    /** The session as an operator reads it. */
    private UpdateSession current(long g) {
        return ok(get(session(g), OPERATOR), UpdateSession.class);
    }

    /** {@code instance} arrives at the prepared barrier in one call, answered on another thread. */
    private CompletableFuture<BarrierStatus> arrivingAtPrepared(
            long g, String instance, int waitSeconds) {
        return CompletableFuture.supplyAsync(
                () ->
                        ok(
                                arrive(
                                        g,
                                        "prepared",
                                        instance,
                                        ReportedPhase.PREPARED,
                                        waitSeconds),
                                BarrierStatus.class));
    }

    /**
     * {@code instance}, the first to arrive, reports PREPARED at the prepared barrier and waits
     * there up to {@code waitSeconds} in the background; returns once the barrier counts it, its
     * answer still pending.
     */
    private CompletableFuture<BarrierStatus> waitingAtPrepared(
            long g, String instance, int waitSeconds) throws InterruptedException {
        CompletableFuture<BarrierStatus> waiting = arrivingAtPrepared(g, instance, waitSeconds);
        while (barrier(g, "prepared", 0).getArrived() < 1) {
            Thread.sleep(20);
        }
        assertThat(waiting).isNotDone();
        return waiting;
    }

    /** Starts the session of "a" and "b" on {@code g}: it prepares, with exactly them. */
    private UpdateSession startedPreparingWithAAndB(long g) {
        UpdateSession session = start(g, 60, "a", "b");
        assertThat(session.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(session.getParticipants())
                .extracting(p -> p.getInstance())
                .containsExactly("a", "b");
        return session;
    }

    /** How many sessions of this test's model failed into {@code state}. */
    private double failedInto(String state) {
        return meters.counter("relay.updates.failed", "model", model, "state", state).count();
    }

    /** {@code session} shows {@code instance} in {@code phase}, its sent digests reported. */
    private static void assertSentBy(UpdateSession session, String instance, UpdatePhase phase) {
        assertThat(session.getParticipants())
                .anySatisfy(
                        p -> {
                            assertThat(p.getInstance()).isEqualTo(instance);
                            assertThat(p.getPhase()).isEqualTo(phase);
                            assertThat(p.getSent()).isTrue();
                        });
    }

    private BarrierStatus barrier(long generation, String name, int wait) {
        return ok(
                get(session(generation) + "/barriers/" + name + "?waitSeconds=" + wait, LOADER),
                BarrierStatus.class);
    }

    /**
     * Each loader's POST_APPLIED says how its engine lived the update (fetch, install, pause); the
     * session's record keeps the slowest of each: what the group waited for and was paused for.
     */
    @Test
    void theSessionRecordsTheSlowestLoadersFetchInstallAndPause() throws Exception {
        long g = publish(model, 1);
        start(g, 60, "a", "b");
        reportedByEach(g, ReportedPhase.PREPARED, "a", "b");
        reportedByEach(g, ReportedPhase.APPLIED, "a", "b");
        UpdateSession before = ok(send(g, postApplied("a", 900L, 40L, 40L)), UpdateSession.class);
        assertThat(before.getDurations().getPauseMs()).isEqualTo(40L);
        UpdateSession done = ok(send(g, postApplied("b", 1200L, 30L, 55L)), UpdateSession.class);
        assertThat(done.getState()).isEqualTo(SessionState.DONE);
        assertThat(done.getDurations().getFetchMs()).isEqualTo(1200L);
        assertThat(done.getDurations().getInstallMs()).isEqualTo(40L);
        assertThat(done.getDurations().getPauseMs()).isEqualTo(55L);
    }

    private PhaseReport postApplied(String instance, long fetchMs, long installMs, long pauseMs) {
        PhaseReport report = new PhaseReport(instance, ReportedPhase.POST_APPLIED);
        report.setEpoch(epochs.getOrDefault(instance, 1L));
        report.setDurations(
                new PhaseDurations().fetchMs(fetchMs).installMs(installMs).pauseMs(pauseMs));
        return report;
    }

    @Test
    void allPreparedOpensApplyAndAllAppliedOpensPostApply() throws Exception {
        long g = publish(model, 1);
        UpdateSession session = start(g, 60, "b", "a");
        assertThat(session.getState()).isEqualTo(SessionState.PREPARING);
        UpdateSessionRequest again = again(g, "a", "b");
        again.setPhaseTimeoutSeconds(60);
        assertThat(join(g, again).getState()).isEqualTo(SessionState.PREPARING);
        // c joins the group, and its plan, after the session started with a and b
        registerInGroup("c");
        String withC = resolvePlan(model, g, GROUP).getPlanId();
        assertProblem(
                call("PUT", session(g), LOADER, new UpdateSessionRequest(List.of("a", "c"), withC)),
                409,
                "session-conflict");

        CompletableFuture<BarrierStatus> waiting =
                CompletableFuture.supplyAsync(() -> barrier(g, "prepared", 20));
        reported(g, "a", ReportedPhase.PREPARED);
        assertThat(barrier(g, "prepared", 0).getArrived()).isEqualTo(1);
        // who keeps it shut: what a loader whose own deadline passed names
        assertThat(barrier(g, "prepared", 0).getWaiting()).containsExactly("b");
        assertProblem(report(g, "a", ReportedPhase.APPLIED), 409, "phase-out-of-order");
        assertProblem(report(g, "z", ReportedPhase.PREPARED), 409, "not-a-participant");
        UpdateSession applying = reported(g, "b", ReportedPhase.PREPARED);
        assertThat(applying.getState()).isEqualTo(SessionState.APPLYING);
        BarrierStatus prepared = waiting.get(20, TimeUnit.SECONDS);
        assertThat(prepared.getOpen()).isTrue();
        assertThat(prepared.getArrived()).isEqualTo(2);

        reportedByEach(g, ReportedPhase.APPLIED, "a", "b");
        assertThat(barrier(g, "applied", 0).getOpen()).isTrue();
        reported(g, "a", ReportedPhase.POST_APPLIED);
        UpdateSession done = reported(g, "b", ReportedPhase.POST_APPLIED);
        assertThat(done.getState()).isEqualTo(SessionState.DONE);
        assertThat(done.getParticipants())
                .allSatisfy(
                        p -> {
                            assertThat(p.getPhase()).isEqualTo(UpdatePhase.DONE);
                            assertThat(p.getBytesRead()).isEqualTo(1000L);
                            assertThat(p.getBytesReceived()).isEqualTo(2000L);
                        });
        assertThat(done.getDurations().getPrepareMs()).isNotNull();
        assertThat(done.getDurations().getApplyMs()).isNotNull();
        assertThat(done.getDurations().getPostApplyMs()).isNotNull();
        for (String phase : List.of("prepare", "apply", "post-apply")) {
            assertThat(meters.timer("relay.updates.phase", "model", model, "phase", phase).count())
                    .as("phase duration metric of " + phase)
                    .isEqualTo(1);
        }
        assertProblem(report(g, "a", ReportedPhase.FAILED), 409, "session-closed");
    }

    /**
     * SENT carries what a loader wrote into each instance's buffers; the sent barrier opens once
     * every participant sent (the session stays APPLYING), and each receiver reads what was sent to
     * it, by sender, and nothing addressed to another. APPLIED still opens post-apply; a receiver
     * that finds its buffers differ reports FAILED and no one post-applies.
     */
    @Test
    void sentDigestsReachTheirReceiversOnceEverySenderSent() {
        long g = publishedAndStarted(60, "a", "b");
        reportedByEach(g, ReportedPhase.PREPARED, "a", "b");
        byte[] aToB = {1, 2, 3};
        byte[] bToA = {4, 5};
        byte[] bToB = {6};
        PhaseReport fromA = phaseReport("a", ReportedPhase.SENT, epochs.getOrDefault("a", 1L));
        fromA.setSent(List.of(new SentDigests("b", aToB)));
        UpdateSession afterA = ok(send(g, fromA), UpdateSession.class);
        assertThat(afterA.getState()).isEqualTo(SessionState.APPLYING);
        assertSentBy(afterA, "a", UpdatePhase.SENT);
        BarrierStatus half = barrier(g, "sent", 0);
        assertThat(half.getOpen()).isFalse();
        assertThat(half.getWaiting()).containsExactly("b");

        PhaseReport fromB = phaseReport("b", ReportedPhase.SENT, epochs.getOrDefault("b", 1L));
        fromB.setSent(List.of(new SentDigests("a", bToA), new SentDigests("b", bToB)));
        assertThat(ok(send(g, fromB), UpdateSession.class).getState())
                .isEqualTo(SessionState.APPLYING);
        assertThat(barrier(g, "sent", 0).getOpen()).isTrue();
        assertThat(barrier(g, "applied", 0).getOpen()).isFalse();

        LandedDigests toB = ok(get(session(g) + "/landed/b", LOADER), LandedDigests.class);
        assertThat(toB.getSenders()).extracting(SentDigests::getInstance).containsExactly("a", "b");
        assertThat(toB.getSenders().get(0).getDigests()).isEqualTo(aToB);
        assertThat(toB.getSenders().get(1).getDigests()).isEqualTo(bToB);
        LandedDigests toA = ok(get(session(g) + "/landed/a", LOADER), LandedDigests.class);
        assertThat(toA.getSenders()).hasSize(1);
        assertThat(toA.getSenders().get(0).getInstance()).isEqualTo("b");
        assertThat(toA.getSenders().get(0).getDigests()).isEqualTo(bToA);

        reported(g, "a", ReportedPhase.APPLIED);
        // a SENT again (a retry) changes nothing: what a sent stays as it was
        PhaseReport again = phaseReport("a", ReportedPhase.SENT, epochs.getOrDefault("a", 1L));
        again.setSent(List.of(new SentDigests("b", new byte[] {9})));
        ok(send(g, again), UpdateSession.class);
        assertThat(
                        ok(get(session(g) + "/landed/b", LOADER), LandedDigests.class)
                                .getSenders()
                                .get(0)
                                .getDigests())
                .isEqualTo(aToB);
        PhaseReport failed = phaseReport("b", ReportedPhase.FAILED, epochs.getOrDefault("b", 1L));
        failed.setFailingPeer("a");
        failed.setError("generation 1 did not land as sent: buffer 'model' of b-r000 ...");
        UpdateSession paused = ok(send(g, failed), UpdateSession.class);
        assertThat(paused.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(paused.getFailedInstance()).isEqualTo("b");
        assertThat(paused.getFailure()).contains("did not land as sent").contains("a");
        assertThat(barrier(g, "applied", 0).getOpen()).isFalse();
    }

    /**
     * An APPLIED reported in a loader's name before it sent (what the lying-reader fault does) does
     * not open the sent barrier: the loader's own SENT, coming later, still counts, so no receiver
     * proves its buffers before every sender's digests are in.
     */
    @Test
    void theSentBarrierWaitsForEverySendersOwnSentReport() {
        long g = publishedAndStarted(60, "a", "b");
        reportedByEach(g, ReportedPhase.PREPARED, "a", "b");
        reported(g, "b", ReportedPhase.APPLIED);
        PhaseReport fromA = phaseReport("a", ReportedPhase.SENT, epochs.getOrDefault("a", 1L));
        fromA.setSent(List.of(new SentDigests("b", new byte[] {1})));
        ok(send(g, fromA), UpdateSession.class);
        BarrierStatus waiting = barrier(g, "sent", 0);
        assertThat(waiting.getOpen()).isFalse();
        assertThat(waiting.getWaiting()).containsExactly("b");

        PhaseReport fromB = phaseReport("b", ReportedPhase.SENT, epochs.getOrDefault("b", 1L));
        fromB.setSent(List.of(new SentDigests("a", new byte[] {2})));
        UpdateSession after = ok(send(g, fromB), UpdateSession.class);
        assertSentBy(after, "b", UpdatePhase.APPLIED);
        assertThat(barrier(g, "sent", 0).getOpen()).isTrue();
        assertThat(
                        ok(get(session(g) + "/landed/a", LOADER), LandedDigests.class)
                                .getSenders()
                                .get(0)
                                .getDigests())
                .isEqualTo(new byte[] {2});
    }

    /** {@code phase} reported by {@code instance} at barrier {@code name}, waiting {@code wait}. */
    private HttpResponse<String> arrive(
            long g, String name, String instance, ReportedPhase phase, int wait) {
        PhaseReport report = new PhaseReport(instance, phase);
        report.setEpoch(epochs.getOrDefault(instance, 1L));
        return call(
                "POST", session(g) + "/barriers/" + name + "?waitSeconds=" + wait, LOADER, report);
    }

    @Test
    void aLoaderReportsAndWaitsAtABarrierInOneCallAndTheLastToArriveOpensIt() throws Exception {
        long g = publish(model, 1);
        start(g, 60, "a", "b");
        assertProblem(arrive(g, "prepared", "a", ReportedPhase.APPLIED, 0), 400, "invalid-request");
        assertThat(current(g).getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.PREPARING));

        CompletableFuture<BarrierStatus> first = waitingAtPrepared(g, "a", 20);
        BarrierStatus last =
                ok(arrive(g, "prepared", "b", ReportedPhase.PREPARED, 20), BarrierStatus.class);
        assertThat(last.getOpen()).isTrue();
        assertThat(last.getArrived()).isEqualTo(2);
        assertThat(first.get(20, TimeUnit.SECONDS).getOpen()).isTrue();

        // Not every participant arrived when the wait runs out: the barrier is still shut.
        BarrierStatus waited =
                ok(arrive(g, "applied", "a", ReportedPhase.APPLIED, 0), BarrierStatus.class);
        assertThat(waited.getOpen()).isFalse();
        assertThat(waited.getArrived()).isEqualTo(1);
        assertThat(waited.getWaiting()).containsExactly("b");
        assertProblem(
                arrive(g, "applied", "z", ReportedPhase.APPLIED, 0), 409, "not-a-participant");
    }

    /**
     * Every loader arrives at each barrier in one call, waiting from before its report on: each
     * waiter is woken to read the session again once, by the event of the arrival that opened the
     * barrier, not by its own report's event nor by each later arrival's (n²/2 reads of the whole
     * session per barrier, which made the one-call arrival cost control-api more than reporting,
     * then waiting). Counted, not timed: the same on any machine.
     */
    @Test
    void eachWaiterAtABarrierIsWokenOnceByTheArrivalThatOpensIt() throws Exception {
        String[] members = {"p0", "p1", "p2", "p3", "p4", "p5"};
        long g = publish(model, 1);
        start(g, 60, members);
        List<CompletableFuture<BarrierStatus>> waiting = new ArrayList<>();
        for (int i = 0; i < members.length - 1; i++) {
            String instance = members[i];
            waiting.add(arrivingAtPrepared(g, instance, 30));
            // One at a time, each waiting before the next arrives: every later event reaches it.
            while (barrier(g, "prepared", 0).getArrived() < i + 1) {
                Thread.sleep(20);
            }
        }
        BarrierStatus last =
                ok(
                        arrive(
                                g,
                                "prepared",
                                members[members.length - 1],
                                ReportedPhase.PREPARED,
                                30),
                        BarrierStatus.class);
        assertThat(last.getOpen()).isTrue();
        for (CompletableFuture<BarrierStatus> w : waiting) {
            BarrierStatus status = w.get(30, TimeUnit.SECONDS);
            assertThat(status.getOpen()).isTrue();
            assertThat(status.getArrived()).isEqualTo(members.length);
        }
        assertThat(
                        meters.counter("relay.updates.barrier.wakes", "model", model, "by", "event")
                                .count())
                .as("session reads of the waiters woken by an event")
                .isLessThanOrEqualTo(members.length - 1);
    }

    @Test
    void failureBeforeApplyResumesTheOldGenerationAndNamesTheLoader() {
        long g = publishedAndStarted(60, "a", "b");
        reported(g, "a", ReportedPhase.PREPARED);
        UpdateSession failed = reported(g, "b", ReportedPhase.FAILED);
        assertThat(failed.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(failed.getFailedInstance()).isEqualTo("b");
        assertThat(failed.getFailure()).contains("12 of 4096").contains("seg-t1");
        BarrierStatus status = barrier(g, "prepared", 5);
        assertThat(status.getFailed()).isTrue();
        assertThat(status.getOpen()).isFalse();
        assertThat(status.getFailedInstance()).isEqualTo("b");
    }

    @Test
    void failureAfterApplyBeganPausesForRebuild() {
        long g = publishedAndStarted(60, "a", "b");
        UpdateSession failed = bFailedOnceApplyBegan(g, ReportedPhase.APPLIED);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo("b");
    }

    /**
     * PREPARED by {@code instance}, saying its engine serves through the fetch (compat, or staged
     * direct workers installing on request): nothing it serves from is written before its install.
     */
    private UpdateSession preparedServingThroughFetch(long g, String instance) {
        PhaseReport report = phaseReport(instance, ReportedPhase.PREPARED, epochs.get(instance));
        report.setServesThroughFetch(true);
        return ok(send(g, report), UpdateSession.class);
    }

    /**
     * Every engine of the group serves through the fetch and installs only after the applied
     * barrier: a failure before it leaves every one serving the old generation, never paused, so
     * the session ends RESUMED_OLD as the loaders do, not PAUSED_REBUILD.
     */
    @Test
    void aFailedFetchOfAGroupServingThroughItResumesTheOldGeneration() {
        long g = publishedAndStarted(60, "a", "b");
        preparedServingThroughFetch(g, "a");
        UpdateSession applying = preparedServingThroughFetch(g, "b");
        assertThat(applying.getState()).isEqualTo(SessionState.APPLYING);
        assertThat(applying.getParticipants())
                .allSatisfy(p -> assertThat(p.getServesThroughFetch()).isTrue());
        reported(g, "a", ReportedPhase.APPLIED);
        UpdateSession failed = reported(g, "b", ReportedPhase.FAILED);
        assertThat(failed.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(failed.getFailedInstance()).isEqualTo("b");
        BarrierStatus applied = barrier(g, "applied", 0);
        assertThat(applied.getFailed()).isTrue();
        assertThat(applied.getState()).isEqualTo(SessionState.RESUMED_OLD);
    }

    /** A fetch that outlives its phase timeout, likewise: nobody installed anything. */
    @Test
    void aFetchOfAGroupServingThroughItThatTimesOutResumesTheOldGeneration() {
        long g = publishedAndStarted(1, "a", "b");
        preparedServingThroughFetch(g, "a");
        preparedServingThroughFetch(g, "b");
        reported(g, "a", ReportedPhase.APPLIED);
        BarrierStatus applied = barrier(g, "applied", 10);
        assertThat(applied.getFailed()).isTrue();
        assertThat(applied.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(applied.getFailedInstance()).isEqualTo("b");
    }

    /**
     * One engine of the group drained for the whole update (in-place direct workers, or a caller
     * that did not say): its served weights may hold a mix once apply began, so the group rebuilds.
     */
    @Test
    void aFailedFetchOfAGroupWithOneEnginePausedThroughItPausesForRebuild() {
        long g = publishedAndStarted(60, "a", "b");
        preparedServingThroughFetch(g, "a");
        reported(g, "b", ReportedPhase.PREPARED);
        reported(g, "a", ReportedPhase.APPLIED);
        UpdateSession failed = reported(g, "b", ReportedPhase.FAILED);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
    }

    @Test
    void aFailedSessionStartsAfreshOnlyOnceTheGroupWasRebuilt() {
        long g = publishedAndStarted(60, "a", "b");
        bFailedOnceApplyBegan(g, ReportedPhase.APPLYING);

        // the same lives joining again find the session as it ended
        UpdateSession same = join(g, again(g, "a", "b"));
        assertThat(same.getState()).isEqualTo(SessionState.PAUSED_REBUILD);

        // rebuilt (registered again, new epochs), the group loads the same generation afresh
        UpdateSession fresh = start(g, 60, "a", "b");
        assertThat(fresh.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(fresh.getFailedInstance()).isNull();
        assertThat(fresh.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.PREPARING));
        reported(g, "a", ReportedPhase.PREPARED);
        UpdateSession prepared = reported(g, "b", ReportedPhase.PREPARED);
        assertThat(prepared.getState()).isEqualTo(SessionState.APPLYING);
    }

    /**
     * A loader that dies for good mid-apply fails the session, and nothing brings it back. The
     * survivors, rebuilt, load the same generation again with their own membership: the failed
     * session is replaced by theirs, not kept (with the dead loader's place in it) until the
     * trainer's next publish.
     */
    @Test
    void aFailedSessionIsReplacedByOneWithTheSurvivorsMembership() throws Exception {
        long g = publishedAndStarted(60, "a", "b", "c");
        reportedByEach(g, ReportedPhase.PREPARED, "a", "b", "c");
        reported(g, "a", ReportedPhase.APPLYING);
        assertThat(call("DELETE", "/api/v1/loaders/c", LOADER, null).statusCode()).isEqualTo(204);
        BarrierStatus failed = barrier(g, "applied", 0);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo("c");

        UpdateSession survivors = startedPreparingWithAAndB(g);
        assertThat(survivors.getFailedInstance()).isNull();
        assertThat(survivors.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.PREPARING));
        assertProblem(report(g, "c", ReportedPhase.PREPARED), 409, "not-a-participant");
        reported(g, "a", ReportedPhase.PREPARED);
        assertThat(reported(g, "b", ReportedPhase.PREPARED).getState())
                .isEqualTo(SessionState.APPLYING);

        // A session that has not ended keeps its membership: the survivors' is not forced on it.
        assertProblem(call("PUT", session(g), LOADER, again(g, "a")), 409, "session-conflict");
    }

    /** The same before apply: an aborted session (the group resumed the old generation). */
    @Test
    void anAbortedSessionIsReplacedByOneWithTheSurvivorsMembership() {
        long g = publishedAndStarted(60, "a", "b", "c");
        reported(g, "a", ReportedPhase.PREPARED);
        assertThat(reported(g, "c", ReportedPhase.FAILED).getState())
                .isEqualTo(SessionState.RESUMED_OLD);

        startedPreparingWithAAndB(g);
    }

    /**
     * A session that ended RESUMED_OLD (one loader failed its fetch, the other gave up at the
     * barrier) is retried by the same lives, once every member of the failed attempt has ended: the
     * group is not left on the old generation until the session's TTL or the next publish.
     */
    @Test
    void aResumedOldSessionIsRetriedByTheSameLivesOnceEveryMemberOfTheAttemptEnded() {
        long g = publishedAndStarted(60, "a", "b");
        reported(g, "a", ReportedPhase.PREPARED);
        assertThat(reported(g, "b", ReportedPhase.FAILED).getState())
                .isEqualTo(SessionState.RESUMED_OLD);
        // "a" learns it at the barrier and reports its own end, too late to change anything
        assertProblem(report(g, "a", ReportedPhase.FAILED), 409, "session-closed");

        assertThat(current(g).getAttempt()).isEqualTo(1);

        UpdateSession retried = join(g, again(g, "a", "b"));
        assertThat(retried.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(retried.getAttempt()).isEqualTo(2);
        assertThat(retried.getFailedInstance()).isNull();
        assertThat(retried.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.PREPARING));
        // the other loader joins the attempt that started
        assertThat(join(g, again(g, "a", "b")).getAttempt()).isEqualTo(2);
        reported(g, "a", ReportedPhase.PREPARED);
        assertThat(reported(g, "b", ReportedPhase.PREPARED).getState())
                .isEqualTo(SessionState.APPLYING);
    }

    /** {@code report} of {@code instance}'s current epoch, naming {@code attempt}. */
    private HttpResponse<String> reportOfAttempt(
            long g, String instance, ReportedPhase phase, int attempt) {
        PhaseReport report = phaseReport(instance, phase, epochs.get(instance));
        report.setAttempt(attempt);
        return send(g, report);
    }

    /**
     * Once attempt 2 runs, a report of attempt 1 (a FAILED sent late, a retried PREPARED) is
     * refused naming both attempts, and changes nothing in attempt 2: not its state, not the
     * participant's phase. Reports of attempt 2, and reports naming no attempt, go through.
     */
    @Test
    void aReportOfAnAttemptThatEndedIsRefusedOnceTheNextAttemptStarted() throws Exception {
        long g = publishedAndStarted(60, "a", "b");
        assertThat(
                        ok(reportOfAttempt(g, "a", ReportedPhase.PREPARED, 1), UpdateSession.class)
                                .getAttempt())
                .isEqualTo(1);
        ok(reportOfAttempt(g, "b", ReportedPhase.FAILED, 1), UpdateSession.class);
        assertProblem(reportOfAttempt(g, "a", ReportedPhase.FAILED, 1), 409, "session-closed");
        assertThat(join(g, again(g, "a", "b")).getAttempt()).isEqualTo(2);

        for (ReportedPhase phase : List.of(ReportedPhase.FAILED, ReportedPhase.PREPARED)) {
            HttpResponse<String> stale = reportOfAttempt(g, "b", phase, 1);
            assertProblem(stale, 409, "session-closed");
            JsonNode problem = json.readTree(stale.body());
            assertThat(problem.get("attempt").asInt()).isEqualTo(1);
            assertThat(problem.get("currentAttempt").asInt()).isEqualTo(2);
            assertThat(problem.get("instance").asString()).isEqualTo("b");
            assertThat(problem.get("detail").asString())
                    .contains("attempt 1")
                    .contains("attempt 2");
        }
        UpdateSession untouched = current(g);
        assertThat(untouched.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(untouched.getFailedInstance()).isNull();
        assertThat(untouched.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.PREPARING));

        ok(reportOfAttempt(g, "a", ReportedPhase.PREPARED, 2), UpdateSession.class);
        assertThat(reported(g, "b", ReportedPhase.PREPARED).getState())
                .isEqualTo(SessionState.APPLYING);
    }

    /**
     * While a member of the failed attempt may still act in it (registered, live, no end reported:
     * "a" waits at the barrier, "c" is still preparing), a retry is refused naming the attempt and
     * those members, and the ended attempt stays as it is. Their FAILED, sent once they learn the
     * session ended, lets the retry through.
     */
    @Test
    void aRetryIsRefusedWhileAMemberOfTheFailedAttemptMayStillAct() throws Exception {
        long g = publishedAndStarted(60, "a", "b", "c");
        reported(g, "a", ReportedPhase.PREPARED);
        assertThat(reported(g, "b", ReportedPhase.FAILED).getState())
                .isEqualTo(SessionState.RESUMED_OLD);

        HttpResponse<String> refused = call("PUT", session(g), LOADER, again(g, "a", "b", "c"));
        assertProblem(refused, 409, "session-closed");
        JsonNode problem = json.readTree(refused.body());
        assertThat(problem.get("attempt").asInt()).isEqualTo(1);
        assertThat(problem.get("waitingFor").toString()).isEqualTo("[\"a\",\"c\"]");
        assertThat(problem.get("detail").asString()).contains("attempt 1").contains("a, c");
        UpdateSession kept = current(g);
        assertThat(kept.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(kept.getAttempt()).isEqualTo(1);
        assertThat(kept.getFailedInstance()).isEqualTo("b");

        // "c" gave up (its FAILED came after the end): it cannot act any more; "a" still may
        assertProblem(report(g, "c", ReportedPhase.FAILED), 409, "session-closed");
        HttpResponse<String> stillA = call("PUT", session(g), LOADER, again(g, "a", "b", "c"));
        assertProblem(stillA, 409, "session-closed");
        assertThat(json.readTree(stillA.body()).get("waitingFor").toString()).isEqualTo("[\"a\"]");

        assertProblem(report(g, "a", ReportedPhase.FAILED), 409, "session-closed");
        UpdateSession retried = join(g, again(g, "a", "b", "c"));
        assertThat(retried.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(retried.getAttempt()).isEqualTo(2);
    }

    /**
     * A group rebuilt after its session ended DONE (every engine registered again, as a lab proving
     * the active generation intact does) loads the same generation through fresh barriers: joining
     * the ended session, whose barriers are open, would let one loader push before its peer took
     * its notify baseline.
     */
    @Test
    void aFinishedSessionStartsAfreshOnlyOnceTheGroupWasRebuilt() {
        long g = publishedAndStarted(60, "a", "b");
        EVERY_PHASE.forEach(phase -> reportedByEach(g, phase, "a", "b"));

        // the same lives joining again find the session as it ended
        UpdateSession same = join(g, again(g, "a", "b"));
        assertThat(same.getState()).isEqualTo(SessionState.DONE);

        UpdateSession fresh = start(g, 60, "a", "b");
        assertThat(fresh.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(barrier(g, "prepared", 0).getOpen()).isFalse();
        reported(g, "a", ReportedPhase.PREPARED);
        assertThat(barrier(g, "prepared", 0).getOpen())
                .as("b has not prepared: a must wait for it")
                .isFalse();
        UpdateSession applying = reported(g, "b", ReportedPhase.PREPARED);
        assertThat(applying.getState()).isEqualTo(SessionState.APPLYING);
    }

    /**
     * The survivors of a loader that died for good loaded the generation alone (their session ended
     * DONE); the instance comes back and the group, rebuilt, loads that same generation together:
     * the finished session is replaced by the whole group's, not kept until the trainer's next
     * publish. While its members are the lives that finished it, it keeps its membership.
     */
    @Test
    void aFinishedSessionIsReplacedByTheRebuiltGroupsMembership() {
        long g = publishedAndStarted(60, "a");
        EVERY_PHASE.forEach(phase -> reportedByEach(g, phase, "a"));
        assertThat(current(g).getState()).isEqualTo(SessionState.DONE);

        // "b" is back, "a" still the life that finished: a conflict, as before
        registerInGroup("b");
        planIds.put(g, resolvePlan(model, g, GROUP).getPlanId());
        assertProblem(call("PUT", session(g), LOADER, again(g, "a", "b")), 409, "session-conflict");

        UpdateSession whole = startedPreparingWithAAndB(g);
        reported(g, "a", ReportedPhase.PREPARED);
        assertThat(reported(g, "b", ReportedPhase.PREPARED).getState())
                .isEqualTo(SessionState.APPLYING);
    }

    @Test
    void aPhaseThatOutlivesItsTimeoutFailsNamingTheLaggard() {
        long g = publishedAndStarted(1, "a", "b");
        reported(g, "a", ReportedPhase.PREPARED);
        long started = System.nanoTime();
        BarrierStatus status = barrier(g, "prepared", 10);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(4000);
        assertThat(status.getFailed()).isTrue();
        assertThat(status.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(status.getFailedInstance()).isEqualTo("b");
        UpdateSession session = current(g);
        assertThat(session.getFailure()).contains("timed out");
    }

    /**
     * A loader that dies silently stops heartbeating; once its registration is gone the peers
     * waiting at the barrier learn it at their next liveness check, naming it, long before the
     * phase timeout (an hour here). Deregistering is the registration's expiry brought forward.
     */
    @Test
    void aParticipantNoLongerRegisteredFailsTheSessionNamingItLongBeforeTheTimeout()
            throws Exception {
        long g = publishedAndStarted(3600, "a", "b");
        CompletableFuture<BarrierStatus> waiting = waitingAtPrepared(g, "a", 30);
        long started = System.nanoTime();
        assertThat(call("DELETE", "/api/v1/loaders/b", LOADER, null).statusCode()).isEqualTo(204);

        BarrierStatus status = waiting.get(20, TimeUnit.SECONDS);
        // Within one liveness interval (5 s) of the registration's end.
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(8000);
        assertThat(status.getFailed()).isTrue();
        assertThat(status.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(status.getFailedInstance()).isEqualTo("b");
        assertThat(status.getFailure()).contains("no longer registered").contains("PREPARED");
    }

    /**
     * Once the applied barrier opened every engine advances on its own, so a POST_APPLIED that
     * never arrives (its reply lost, control-api away) must not turn the session into
     * PAUSED_REBUILD while the engines serve the generation: post-apply ends DONE at its timeout,
     * the silent loader left APPLIED, and its report, retried later, still confirms it (served
     * generation recorded).
     */
    @Test
    void aLostPostAppliedEndsTheSessionDoneAndTheRetriedReportStillConfirmsIt() throws Exception {
        long g = publishedAndStarted(2, "a", "b");
        reportedByEach(g, ReportedPhase.PREPARED, "a", "b");
        reportedByEach(g, ReportedPhase.APPLIED, "a", "b");
        assertThat(reported(g, "a", ReportedPhase.POST_APPLIED).getState())
                .isEqualTo(SessionState.POST_APPLYING);
        Thread.sleep(2500); // b's POST_APPLIED is lost; the phase times out

        UpdateSession ended = current(g);
        assertThat(ended.getState())
                .as(String.valueOf(ended.getFailure()))
                .isEqualTo(SessionState.DONE);
        assertThat(ended.getFailedInstance()).isNull();
        assertThat(ended.getParticipants())
                .anySatisfy(
                        p -> {
                            assertThat(p.getInstance()).isEqualTo("b");
                            assertThat(p.getPhase()).isEqualTo(UpdatePhase.APPLIED);
                        });

        UpdateSession confirmed = reported(g, "b", ReportedPhase.POST_APPLIED);
        assertThat(confirmed.getState()).isEqualTo(SessionState.DONE);
        assertThat(confirmed.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.DONE));
        assertThat(ok(get("/api/v1/loaders/b", OPERATOR), Loader.class).getGeneration())
                .isEqualTo(g);
        // Retried once more: nothing changes.
        assertThat(reported(g, "b", ReportedPhase.POST_APPLIED).getState())
                .isEqualTo(SessionState.DONE);
    }

    /**
     * A loader that restarted after the applied barrier (a new life, new buffers) will never
     * confirm; the others advanced. The session ends DONE at the next touch, not PAUSED_REBUILD,
     * and not only at the phase timeout (an hour here).
     */
    @Test
    void aLoaderRestartedInPostApplyEndsTheSessionDoneWithoutWaitingForTheTimeout() {
        long g = publishedAndStarted(3600, "a", "b");
        reportedByEach(g, ReportedPhase.PREPARED, "a", "b");
        reportedByEach(g, ReportedPhase.APPLIED, "a", "b");
        reported(g, "a", ReportedPhase.POST_APPLIED);
        long before = epochs.get("b");
        assertThat(registerInGroup("b")).isGreaterThan(before);

        HttpResponse<String> restarted = report(g, "b", ReportedPhase.POST_APPLIED);
        assertProblem(restarted, 409, "epoch-fenced");
        UpdateSession session = current(g);
        assertThat(session.getState())
                .as(String.valueOf(session.getFailure()))
                .isEqualTo(SessionState.DONE);
        assertThat(session.getFailedInstance()).isNull();
    }

    @Test
    void reportsOfAnOlderLoaderEpochAreFencedAndPostApplyRecordsTheServedGeneration() {
        long g = publish(model, 1);
        String instance = "inst-" + model;
        registerLoader(instance, compatLoader(model, GROUP, "r0", 1));
        Loader second = registerLoader(instance, compatLoader(model, GROUP, "r0", 1));
        start(g, 60, instance);
        assertThat(epochs.get(instance)).isEqualTo(second.getEpoch() + 1);
        PhaseReport stale = phaseReport(instance, ReportedPhase.PREPARED, second.getEpoch());
        assertProblem(send(g, stale), 409, "epoch-fenced");
        for (ReportedPhase phase : EVERY_PHASE) {
            ok(
                    send(g, readRight(g, phaseReport(instance, phase, epochs.get(instance)))),
                    UpdateSession.class);
        }
        assertThat(ok(get("/api/v1/loaders/" + instance, OPERATOR), Loader.class).getGeneration())
                .isEqualTo(g);
    }

    @Test
    void reportsWithoutAnEpochOrWithAnotherLoadersEpochAreRefusedNamingTheEpoch() throws Exception {
        long g = publish(model, 1);
        String a = "fa-" + model;
        String b = "fb-" + model;
        start(g, 60, a, b);
        long epochA = epochs.get(a);
        long epochB = epochs.get(b);
        assertThat(epochA).isNotEqualTo(epochB);

        HttpResponse<String> missing = send(g, phaseReport(a, ReportedPhase.PREPARED, null));
        assertProblem(missing, 400, "epoch-required");
        assertThat(missing.body()).contains(a);

        // Loader a reports for b with its own epoch: foreign to b.
        HttpResponse<String> foreign = send(g, phaseReport(b, ReportedPhase.PREPARED, epochA));
        assertProblem(foreign, 409, "epoch-fenced");
        JsonNode problem = json.readTree(foreign.body());
        assertThat(problem.get("epoch").asLong()).isEqualTo(epochA);
        assertThat(problem.get("registeredEpoch").asLong()).isEqualTo(epochB);
        assertThat(problem.get("reason").asString()).isEqualTo("foreign");
        assertThat(problem.get("detail").asString()).contains("never issued to loader " + b);

        // A made-up epoch is foreign as well.
        PhaseReport madeUp = phaseReport(b, ReportedPhase.PREPARED, epochB + 1_000_000);
        assertProblem(send(g, madeUp), 409, "epoch-fenced");

        // Nothing of it moved the session: both still prepare.
        UpdateSession session = current(g);
        assertThat(session.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(session.getParticipants())
                .allSatisfy(p -> assertThat(p.getPhase()).isEqualTo(UpdatePhase.PREPARING));
    }

    @Test
    void aLoaderReRegisteredAfterApplyBeganCannotReportForTheLifeThatJoined() {
        long g = publish(model, 1);
        String a = "ra-" + model;
        String b = "rb-" + model;
        start(g, 60, a, b);
        reportedByEach(g, ReportedPhase.PREPARED, a, b);
        long before = epochs.get(a);
        long after = registerInGroup(a); // a restarted while applying
        assertThat(after).isGreaterThan(before);

        // Its previous life's report is stale ...
        HttpResponse<String> refused = send(g, phaseReport(a, ReportedPhase.APPLIED, before));
        assertProblem(refused, 409, "epoch-fenced");
        assertThat(json.readTree(refused.body()).get("reason").asString()).isEqualTo("stale");
        assertThat(json.readTree(refused.body()).get("epoch").asLong()).isEqualTo(before);

        // ... and its new life cannot claim what the old one applied: the group pauses.
        HttpResponse<String> restarted = report(g, a, ReportedPhase.APPLIED);
        assertProblem(restarted, 409, "epoch-fenced");
        assertThat(json.readTree(restarted.body()).get("reason").asString()).isEqualTo("restarted");
        assertThat(json.readTree(restarted.body()).get("joinedEpoch").asLong()).isEqualTo(before);
        UpdateSession session = current(g);
        assertThat(session.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(session.getFailedInstance()).isEqualTo(a);
        assertThat(session.getFailure()).contains("re-registered during the update");
    }

    private HttpResponse<String> applied(
            long g, String instance, List<RangeChecksums.Entry> entries) {
        PhaseReport r = phaseReport(instance, ReportedPhase.APPLIED, epochs.get(instance));
        r.setChecksums(new RangeChecksums(entries).encode());
        return send(g, r);
    }

    /**
     * What "ca" and "cb" read of generation {@code g} by the session's plan, each range's CRC32C
     * such that an object's ranges combine to its registered checksum; with {@code corrupt}, the
     * first range cb read (or ca, when cb reads nothing) does not.
     */
    private List<List<RangeChecksums.Entry>> readByTwo(long g, boolean corrupt) {
        Map<String, List<RangeChecksums.Entry>> planned =
                plannedReads(planIds.get(g), Crc32c.parse("crc32c:0badf00d"));
        List<RangeChecksums.Entry> first = new ArrayList<>(planned.getOrDefault("ca", List.of()));
        List<RangeChecksums.Entry> second = new ArrayList<>(planned.getOrDefault("cb", List.of()));
        if (corrupt) {
            List<RangeChecksums.Entry> wrong = second.isEmpty() ? first : second;
            RangeChecksums.Entry e = wrong.get(0);
            wrong.set(0, new RangeChecksums.Entry(e.object(), e.offset(), e.length(), ~e.crc()));
        }
        return List.of(first, second);
    }

    /**
     * The loaders among {@code reads} that read part of {@code object}, as a failure names them.
     */
    private static String readersOf(String object, List<List<RangeChecksums.Entry>> reads) {
        List<String> readers = new ArrayList<>();
        for (int i = 0; i < reads.size(); i++) {
            if (reads.get(i).stream().anyMatch(e -> e.object().equals(object))) {
                readers.add(i == 0 ? "ca" : "cb");
            }
        }
        return String.join(",", readers);
    }

    @Test
    void theAppliedBarrierOpensOnlyOnceEveryObjectReadMatchesItsPublishedChecksum() {
        long g = publishedAndStarted(60, "ca", "cb");
        reportedByEach(g, ReportedPhase.PREPARED, "ca", "cb");
        List<List<RangeChecksums.Entry>> reads = readByTwo(g, false);
        UpdateSession one = ok(applied(g, "ca", reads.get(0)), UpdateSession.class);
        assertThat(one.getState()).isEqualTo(SessionState.APPLYING);
        UpdateSession both = ok(applied(g, "cb", reads.get(1)), UpdateSession.class);
        assertThat(both.getState()).isEqualTo(SessionState.POST_APPLYING);
        assertThat(both.getVerifiedObjects()).isEqualTo((long) fragments(model, g).size());
        assertThat(both.getPartialObjects()).isZero();
        assertThat(both.getDurations().getVerifyMs()).isNotNull();
        assertThat(barrier(g, "applied", 0).getOpen()).isTrue();
    }

    /**
     * Publishes step {@code step} with real bytes in the store, registered with their CRC32C; with
     * {@code flipped}, one byte of the first object (by name) is flipped in the store after its
     * checksum was taken, as a bad segment would hold it. Answers the generation and, by object id,
     * the bytes as stored.
     */
    private Stored publishStored(long step, boolean flipped) {
        return publishStored(step, flipped ? FIRST_OBJECT : null, 7);
    }

    /** Flip a byte of the first object by name. */
    private static final String FIRST_OBJECT = "";

    /**
     * {@link #publishStored(long, boolean)}, with byte {@code at} of object {@code flippedObject}
     * ({@code null}: none; {@link #FIRST_OBJECT}: the first by name) flipped in the store.
     */
    private Stored publishStored(long step, String flippedObject, int at) {
        long g = open(model, step).getGeneration().getGeneration();
        Map<String, byte[]> stored = new TreeMap<>();
        List<RegisteredObject> objects = new ArrayList<>();
        for (StoredFragment f : fragments(model, g)) {
            byte[] bytes = new byte[Math.toIntExact(f.getBytes())];
            new java.util.Random(f.getKey().hashCode()).nextBytes(bytes);
            objects.add(
                    new RegisteredObject(
                            f.getKey(),
                            f.getBytes(),
                            Crc32c.format(Crc32c.of(bytes, 0, bytes.length))));
            stored.put(f.getKey().substring((model + "/" + g + "/").length()), bytes);
        }
        if (FIRST_OBJECT.equals(flippedObject)) {
            stored.values().iterator().next()[at] ^= 0x10;
        } else if (flippedObject != null) {
            stored.get(flippedObject)[at] ^= 0x10;
        }
        stored.forEach((object, bytes) -> store.get().put(model + "/" + g + "/" + object, bytes));
        assertThat(register(model, g, objects).statusCode()).isEqualTo(200);
        assertThat(commit(model, g).statusCode()).isEqualTo(200);
        return new Stored(g, stored);
    }

    private record Stored(long generation, Map<String, byte[]> bytes) {}

    /**
     * What {@code readers} report reading of {@code stored} by the plan of their session of
     * generation {@code g} (each reader's planned ranges, in order), each range with the CRC32C of
     * the bytes as stored: honest reports, whatever the store holds.
     */
    private List<List<RangeChecksums.Entry>> readByPlan(Stored stored, long g, String... readers) {
        Map<String, List<RangeChecksums.Entry>> planned = plannedReads(planIds.get(g), 0);
        List<List<RangeChecksums.Entry>> out = new ArrayList<>();
        for (String reader : readers) {
            List<RangeChecksums.Entry> reads = new ArrayList<>();
            for (RangeChecksums.Entry e : planned.getOrDefault(reader, List.of())) {
                byte[] bytes = stored.bytes().get(e.object());
                int offset = Math.toIntExact(e.offset());
                int length = Math.toIntExact(e.length());
                reads.add(
                        new RangeChecksums.Entry(
                                e.object(),
                                e.offset(),
                                e.length(),
                                Crc32c.of(bytes, offset, length)));
            }
            out.add(reads);
        }
        return out;
    }

    private Generation generation(long g) {
        return ok(get("/api/v1/models/" + model + "/generations/" + g, OPERATOR), Generation.class);
    }

    private long active() {
        return ok(
                        get("/api/v1/models/" + model + "/generations/active", OPERATOR),
                        Generation.class)
                .getGeneration();
    }

    /**
     * Bytes really flipped in the store: the readers read them honestly, their ranges combine to
     * something other than what was published, and control-api's own read of the object confirms
     * it. The generation is corrupt for every group, and the one before it is active again.
     */
    @Test
    void storedBytesThatDoNotMatchTheirChecksumMarkTheGenerationCorruptOnceControlApiReadThem() {
        long served = publishStored(1, false).generation();
        Stored stored = publishStored(2, true);
        long g = stored.generation();
        start(g, 60, "ca", "cb");
        reportedByEach(g, ReportedPhase.PREPARED, "ca", "cb");
        List<List<RangeChecksums.Entry>> reads = readByPlan(stored, g, "ca", "cb");
        String object = stored.bytes().keySet().iterator().next();
        String readers = readersOf(object, reads);
        ok(applied(g, "ca", reads.get(0)), UpdateSession.class);
        UpdateSession failed = ok(applied(g, "cb", reads.get(1)), UpdateSession.class);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo(readers);
        assertThat(failed.getFailure())
                .contains("object " + object, readers, "does not match its registered checksum")
                .contains("control-api read the stored object back");
        BarrierStatus applied = barrier(g, "applied", 0);
        assertThat(applied.getOpen()).isFalse();
        assertThat(applied.getFailed()).isTrue();
        assertThat(applied.getFailure()).contains(object);
        assertProblem(report(g, "ca", ReportedPhase.POST_APPLIED), 409, "session-closed");
        assertThat(failedInto("PAUSED_REBUILD")).isEqualTo(1.0);
        // The generation is not served again; the one before it is active once more.
        Generation corrupt = generation(g);
        assertThat(corrupt.getCorruptObject()).isEqualTo(object);
        assertThat(corrupt.getState()).isEqualTo(GenerationState.RETIRED);
        assertThat(active()).isEqualTo(served);
        assertThat(generation(served).getState()).isEqualTo(GenerationState.ACTIVE);
        assertThat(failed.getFailure()).contains("generation " + served + " is active again");
    }

    /**
     * The same stored corruption found by the checksum proof at the applied barrier, in a group
     * whose engines serve through the fetch: none installed, so the session ends RESUMED_OLD; the
     * generation is still marked corrupt.
     */
    @Test
    void storedBytesThatDoNotMatchTheirChecksumResumeTheOldGenerationOfAGroupServingThroughFetch() {
        long served = publishStored(1, false).generation();
        Stored stored = publishStored(2, true);
        long g = stored.generation();
        start(g, 60, "ca", "cb");
        preparedServingThroughFetch(g, "ca");
        preparedServingThroughFetch(g, "cb");
        List<List<RangeChecksums.Entry>> reads = readByPlan(stored, g, "ca", "cb");
        ok(applied(g, "ca", reads.get(0)), UpdateSession.class);
        UpdateSession failed = ok(applied(g, "cb", reads.get(1)), UpdateSession.class);
        assertThat(failed.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(failed.getFailure()).contains("does not match its registered checksum");
        assertThat(failedInto("RESUMED_OLD")).isEqualTo(1.0);
        assertThat(generation(g).getCorruptObject()).isNotNull();
        assertThat(active()).isEqualTo(served);
    }

    /**
     * One reader reports a checksum its bytes do not have (a lying token, bad memory, a faulty
     * NIC). Its report alone must not take the generation from every group: control-api reads the
     * disputed object back, finds it as published, and fails only this session, naming that reader
     * and the object. The generation stays active, and another group's session goes on to it.
     */
    @Test
    void aReaderWhoseChecksumsTheStoredBytesContradictFailsOnlyItsOwnSession() {
        long served = publishStored(1, false).generation();
        Stored stored = publishStored(2, false);
        long g = stored.generation();
        start(g, 60, "ca", "cb");
        reportedByEach(g, ReportedPhase.PREPARED, "ca", "cb");
        List<List<RangeChecksums.Entry>> reads = readByPlan(stored, g, "ca", "cb");
        // the liar is cb when the plan has it read anything, else ca
        int liarIndex = reads.get(1).isEmpty() ? 0 : 1;
        String liar = liarIndex == 0 ? "ca" : "cb";
        List<RangeChecksums.Entry> lies = new ArrayList<>(reads.get(liarIndex));
        RangeChecksums.Entry lie = lies.get(0);
        lies.set(0, new RangeChecksums.Entry(lie.object(), lie.offset(), lie.length(), ~lie.crc()));
        List<List<RangeChecksums.Entry>> reported = new ArrayList<>(reads);
        reported.set(liarIndex, lies);
        ok(applied(g, "ca", reported.get(0)), UpdateSession.class);
        UpdateSession failed = ok(applied(g, "cb", reported.get(1)), UpdateSession.class);

        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo(liar);
        assertThat(failed.getFailure())
                .contains("object " + lie.object(), liar, "does not match the stored bytes")
                .contains("[" + lie.offset() + ", " + lie.end() + ") by " + liar)
                .doesNotContain("marked corrupt");
        BarrierStatus applied = barrier(g, "applied", 0);
        assertThat(applied.getFailed()).isTrue();
        assertThat(applied.getFailedInstance()).isEqualTo(liar);
        Generation still = generation(g);
        assertThat(still.getCorruptObject()).isNull();
        assertThat(still.getState()).isEqualTo(GenerationState.ACTIVE);
        assertThat(active()).isEqualTo(g);
        assertThat(generation(served).getState()).isEqualTo(GenerationState.RETIRED);

        // Another group loads the same generation through its own session, untouched.
        String other = "other";
        for (String instance : List.of("oa", "ob")) {
            epochs.put(
                    instance,
                    registerLoader(instance, compatLoader(model, other, "r-" + instance, 1))
                            .getEpoch());
        }
        String otherPlan = resolvePlan(model, g, other).getPlanId();
        planIds.put(g, otherPlan);
        List<List<RangeChecksums.Entry>> otherReads = readByPlan(stored, g, "oa", "ob");
        String otherSession = sessionPath(model, g, other);
        ok(
                call(
                        "PUT",
                        otherSession,
                        LOADER,
                        new UpdateSessionRequest(List.of("oa", "ob"), otherPlan)),
                UpdateSession.class);
        for (String instance : List.of("oa", "ob")) {
            PhaseReport prepared =
                    phaseReport(instance, ReportedPhase.PREPARED, epochs.get(instance));
            ok(call("POST", otherSession + "/reports", LOADER, prepared), UpdateSession.class);
        }
        UpdateSession otherApplied = null;
        for (int i = 0; i < 2; i++) {
            String instance = i == 0 ? "oa" : "ob";
            PhaseReport r = phaseReport(instance, ReportedPhase.APPLIED, epochs.get(instance));
            r.setChecksums(new RangeChecksums(otherReads.get(i)).encode());
            otherApplied =
                    ok(call("POST", otherSession + "/reports", LOADER, r), UpdateSession.class);
        }
        assertThat(otherApplied.getState()).isEqualTo(SessionState.POST_APPLYING);
    }

    /** The object of {@code layer.0.weight} the direct loader of these tests reads in part. */
    private static final String HALF_READ = "layer.0.weight";

    /**
     * Starts the session of generation {@code g} with one parameter-direct loader "pd" whose worker
     * places only rows [0, 16) of {@code layer.0.weight} (and {@code layer.0.bias} whole): the plan
     * reads the first half of that tensor's object and never the rest.
     */
    private void startHalfReader(long g) {
        WorkerPlacement w =
                new WorkerPlacement(
                        "pd-w0",
                        "r-pd",
                        "eth0",
                        ConsumeMode.DIRECT,
                        List.of(new ReceiveBuffer("params", "rx-pd-w0", 1L << 20)));
        w.setFragments(
                List.of(
                        new TargetFragment(
                                HALF_READ,
                                List.of(0L, 0L),
                                List.of(16L, 32L),
                                "params",
                                0L,
                                List.of(64L, 2L)),
                        new TargetFragment(
                                "layer.0.bias",
                                List.of(0L),
                                List.of(32L),
                                "params",
                                4096L,
                                List.of(2L))));
        epochs.put(
                "pd",
                registerLoader("pd", new LoaderRegistration(model, GROUP, "r-pd", List.of(w)))
                        .getEpoch());
        planIds.put(g, resolvePlan(model, g, GROUP).getPlanId());
        join(g, new UpdateSessionRequest(List.of("pd"), planIds.get(g)));
        reported(g, "pd", ReportedPhase.PREPARED);
    }

    /** The stored object holding {@link #HALF_READ}, and the one range the plan reads of it. */
    private RangeChecksums.Entry halfRead(Stored stored, long g) {
        List<RangeChecksums.Entry> reads = readByPlan(stored, g, "pd").get(0);
        List<RangeChecksums.Entry> ofIt =
                reads.stream().filter(e -> e.object().startsWith(HALF_READ)).toList();
        assertThat(ofIt).hasSize(1);
        RangeChecksums.Entry e = ofIt.get(0);
        assertThat(e.offset()).isZero();
        assertThat(e.length()).isLessThan(stored.bytes().get(e.object()).length);
        return e;
    }

    /**
     * An object the plan reads only in part is proven all the same: control-api reads the bytes no
     * loader reads itself and combines their CRC32C with the reported ranges'.
     */
    @Test
    void anObjectReadOnlyInPartIsProvenWithControlApisOwnReadOfTheRest() {
        Stored stored = publishStored(1, false);
        long g = stored.generation();
        startHalfReader(g);
        halfRead(stored, g);
        List<RangeChecksums.Entry> reads = readByPlan(stored, g, "pd").get(0);
        UpdateSession done = ok(applied(g, "pd", reads), UpdateSession.class);
        assertThat(done.getState()).isEqualTo(SessionState.POST_APPLYING);
        assertThat(done.getPartialObjects()).isEqualTo(1L);
        assertThat(done.getVerifiedObjects()).isEqualTo((long) reads.size());
    }

    /**
     * A flipped byte inside the range the plan reads of an object read only in part, read honestly:
     * its range no longer combines with the rest to the published checksum, and control-api's
     * read-back confirms the stored bytes are wrong.
     */
    @Test
    void aFlippedByteInAnObjectReadOnlyInPartIsCaught() {
        Stored clean = publishStored(1, false);
        String object = halfReadObject(clean);
        Stored stored = publishStored(2, object, 5);
        long g = stored.generation();
        startHalfReader(g);
        halfRead(stored, g);
        UpdateSession failed =
                ok(applied(g, "pd", readByPlan(stored, g, "pd").get(0)), UpdateSession.class);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo("pd");
        assertThat(failed.getFailure())
                .contains("object " + object, "does not match its registered checksum")
                .contains("control-api read the stored object back");
        assertThat(generation(g).getCorruptObject()).isEqualTo(object);
        assertThat(active()).isEqualTo(clean.generation());
    }

    /** The id of the object holding {@link #HALF_READ} among {@code stored}'s. */
    private static String halfReadObject(Stored stored) {
        List<String> ids =
                stored.bytes().keySet().stream().filter(o -> o.startsWith(HALF_READ)).toList();
        assertThat(ids).hasSize(1);
        return ids.get(0);
    }

    /**
     * A reader that lies about the one range it reads of an object read only in part is named, and
     * only its session fails: the stored object, read back, is as published.
     */
    @Test
    void aLyingChecksumOfAnObjectReadOnlyInPartFailsTheSessionNamingTheReader() {
        Stored stored = publishStored(1, false);
        long g = stored.generation();
        startHalfReader(g);
        RangeChecksums.Entry half = halfRead(stored, g);
        List<RangeChecksums.Entry> lies = new ArrayList<>();
        for (RangeChecksums.Entry e : readByPlan(stored, g, "pd").get(0)) {
            lies.add(
                    e.equals(half)
                            ? new RangeChecksums.Entry(e.object(), e.offset(), e.length(), ~e.crc())
                            : e);
        }
        UpdateSession failed = ok(applied(g, "pd", lies), UpdateSession.class);
        assertThat(failed.getState()).isEqualTo(SessionState.PAUSED_REBUILD);
        assertThat(failed.getFailedInstance()).isEqualTo("pd");
        assertThat(failed.getFailure())
                .contains("object " + half.object(), "does not match the stored bytes")
                .contains("[" + half.offset() + ", " + half.end() + ") by pd")
                .doesNotContain("marked corrupt");
        assertThat(generation(g).getCorruptObject()).isNull();
        assertThat(active()).isEqualTo(g);
    }

    @Test
    void unreadableRangeChecksumsAreRefusedNamingTheLoader() {
        long g = publishedAndStarted(60, "ca");
        reported(g, "ca", ReportedPhase.PREPARED);
        PhaseReport r = phaseReport("ca", ReportedPhase.APPLIED, epochs.get("ca"));
        r.setChecksums(new byte[] {1, 2, 3});
        HttpResponse<String> refused = send(g, r);
        assertProblem(refused, 400, "invalid-request");
        assertThat(refused.body()).contains("range checksums of ca");
    }
}
