package io.weightrelay.control.update;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.common.model.StoredFragment;
import io.weightrelay.api.control.model.GcReport;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.Lease;
import io.weightrelay.api.control.model.LeaseRequest;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.ParticipantState;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdatePreparation;
import io.weightrelay.api.control.model.UpdatePreparationRequest;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;
import tools.jackson.databind.JsonNode;

/**
 * A loader's prepare in one call: the generation, the plan, the session and the lease together, and
 * the group's loaders only when their buffers changed since the digest the loader names.
 */
class UpdatePreparationTest extends ControlApiTestSupport {

    private static final String GROUP = "grp";

    @Autowired StringRedisTemplate redis;
    @Autowired RedisKeys keys;
    @Autowired MeterRegistry meters;

    private final String model = newModel();

    /** The epoch each instance's latest registration returned. */
    private final Map<String, Long> epochs = new HashMap<>();

    private void registerInGroup(String instance, long bufferBytes) {
        LoaderRegistration r = compatLoader(model, GROUP, "node-" + instance, 1);
        r.getWorkers().get(0).getBuffers().get(0).setSize(bufferBytes);
        epochs.put(instance, registerLoader(instance, r).getEpoch());
    }

    private HttpResponse<String> prepare(long generation, String instance, String knownDigest) {
        return prepare(generation, instance, knownDigest, 60);
    }

    private HttpResponse<String> prepare(
            long generation, String instance, String knownDigest, int leaseSeconds) {
        UpdatePreparationRequest request = new UpdatePreparationRequest(instance, leaseSeconds);
        request.setPhaseTimeoutSeconds(30);
        request.setKnownBuffersDigest(knownDigest);
        return call(
                "POST", sessionPath(model, generation, GROUP) + "/preparations", LOADER, request);
    }

    /** No control-plane outage to give grace to: the window cleared and the last tick now. */
    private void servedThroughout() {
        redis.delete(keys.outage());
        Long now = redis.execute((RedisCallback<Long>) c -> c.serverCommands().time());
        redis.opsForValue().set(keys.lastTick(), String.valueOf(now));
    }

    private Double lease(long generation, String holder) {
        return redis.opsForZSet().score(keys.leases(new GenerationId(model, generation)), holder);
    }

    @Test
    void oneCallResolvesThePlanJoinsTheSessionAndLeasesTheGeneration() {
        long g = publish(model, 1);
        registerInGroup("a", 1L << 20);
        registerInGroup("b", 1L << 20);

        UpdatePreparation first = ok(prepare(g, "a", null), UpdatePreparation.class);

        assertThat(first.getGeneration().getGeneration()).isEqualTo(g);
        assertThat(first.getGeneration().getState()).isEqualTo(GenerationState.ACTIVE);
        PlanSummary plan = first.getPlan();
        assertThat(plan.getValid()).isTrue();
        assertThat(plan.getInstances()).containsExactly("a", "b");
        assertThat(resolvePlan(model, g, GROUP).getPlanId()).isEqualTo(plan.getPlanId());
        assertThat(first.getSession().getState()).isEqualTo(SessionState.PREPARING);
        assertThat(first.getSession().getPlanId()).isEqualTo(plan.getPlanId());
        assertThat(first.getSession().getParticipants())
                .extracting(ParticipantState::getInstance)
                .containsExactly("a", "b");
        assertThat(first.getLease().getHolder()).isEqualTo("a");
        assertThat(lease(g, "a")).isNotNull();
        assertThat(first.getLoaders()).extracting(l -> l.getInstance()).containsExactly("a", "b");

        // The second loader names the buffers it holds: they did not change, so they stay home.
        UpdatePreparation second =
                ok(prepare(g, "b", first.getBuffersDigest()), UpdatePreparation.class);
        assertThat(second.getBuffersDigest()).isEqualTo(first.getBuffersDigest());
        assertThat(second.getLoaders()).isEmpty();
        assertThat(second.getPlan().getPlanId()).isEqualTo(plan.getPlanId());
        assertThat(second.getSession().getParticipants()).hasSize(2);
        assertThat(lease(g, "b")).isNotNull();
    }

    @Test
    void aCommitResolvesThePlanOfAGroupWithLiveLoadersBeforeAnyLoaderAsks() throws Exception {
        registerInGroup("a", 1L << 20);
        registerInGroup("b", 1L << 20);
        double computed = meters.counter("relay.plans.cache", "result", "miss").count();

        long g = publish(model, 1);

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (meters.counter("relay.plans.cache", "result", "miss").count() == computed
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        PlanSummary plan = resolvePlan(model, g, GROUP);
        assertThat(plan.getCached()).isTrue();
        assertThat(plan.getInstances()).containsExactly("a", "b");
        UpdatePreparation prepared = ok(prepare(g, "a", null), UpdatePreparation.class);
        assertThat(prepared.getPlan().getPlanId()).isEqualTo(plan.getPlanId());
        assertThat(prepared.getPlan().getCached()).isTrue();
    }

    @Test
    void anOpenResolvesThePlanWhileTheTrainersStoreTheBytes() throws Exception {
        registerInGroup("a", 1L << 20);
        registerInGroup("b", 1L << 20);
        double computed = meters.counter("relay.plans.cache", "result", "miss").count();

        long g = open(model, 1).getGeneration().getGeneration();

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (meters.counter("relay.plans.cache", "result", "miss").count() == computed
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(meters.counter("relay.plans.cache", "result", "miss").count())
                .isEqualTo(computed + 1);
        // Computed before a single object was registered: the plan needs the manifest only.
        assertThat(generationState(g)).isEqualTo(GenerationState.OPEN);
        PlanSummary plan = resolvePlan(model, g, GROUP);
        assertThat(plan.getCached()).isTrue();
        assertThat(plan.getInstances()).containsExactly("a", "b");

        registerAll(model, g);
        assertThat(commit(model, g).statusCode()).isEqualTo(200);
        UpdatePreparation prepared = ok(prepare(g, "a", null), UpdatePreparation.class);
        assertThat(prepared.getPlan().getPlanId()).isEqualTo(plan.getPlanId());
        assertThat(prepared.getPlan().getCached()).isTrue();
        // The commit's own eager resolve found it cached: still the one computation.
        assertThat(meters.counter("relay.plans.cache", "result", "miss").count())
                .isEqualTo(computed + 1);
    }

    private GenerationState generationState(long generation) {
        return read(generationPath(model, generation), Generation.class).getState();
    }

    @Test
    void aChangedBufferChangesTheDigestAndSendsTheLoadersAgain() {
        long g = publish(model, 1);
        registerInGroup("a", 1L << 20);
        registerInGroup("b", 1L << 20);
        String before = ok(prepare(g, "a", null), UpdatePreparation.class).getBuffersDigest();

        registerInGroup("b", 2L << 20);
        long next = publish(model, 2);
        UpdatePreparation after = ok(prepare(next, "a", before), UpdatePreparation.class);

        assertThat(after.getBuffersDigest()).isNotEqualTo(before);
        assertThat(after.getLoaders()).hasSize(2);
        assertThat(after.getLoaders().get(1).getWorkers().get(0).getBuffers().get(0).getSize())
                .isEqualTo(2L << 20);
    }

    @Test
    void aLoaderThatRegistersAgainDropsTheLeasesOfItsEarlierIncarnation() {
        long g1 = publish(model, 1);
        registerInGroup("a", 1L << 20);
        ok(prepare(g1, "a", null), UpdatePreparation.class);
        ok(
                call(
                        "POST",
                        generationPath(model, g1) + "/leases",
                        LOADER,
                        new LeaseRequest("ckpt", 300)),
                Lease.class);
        long g2 = publish(model, 2);
        assertThat(lease(g1, "a")).isNotNull();

        // The loader died serving g1 and its engine registers again: the buffers are new and serve
        // nothing, so nothing of the dead incarnation may keep g1 from collection for its lease.
        registerInGroup("a", 1L << 20);

        assertThat(lease(g1, "a")).isNull();
        assertThat(lease(g1, "ckpt")).isNotNull();
        releaseLease(g1, "ckpt");
        GcReport report = collectGarbage();
        assertThat(report.getCollected()).containsExactly(g1);
        assertThat(report.getKept()).containsExactly(g2);
    }

    @Test
    void aLoadersHeartbeatCarriesItsLeasesAndNeverRevivesOneThatLapsed() throws Exception {
        long g1 = publish(model, 1);
        registerInGroup("a", 1L << 20);
        registerInGroup("b", 1L << 20);
        ok(prepare(g1, "a", null, 1), UpdatePreparation.class);
        ok(prepare(g1, "b", null, 1), UpdatePreparation.class);
        long g2 = publish(model, 2);

        // "a" beats: its one-second lease on the generation it serves now lasts as long as its
        // registration (the suite's loader TTL is 60 s).
        long beforeBeat = System.currentTimeMillis();
        heartbeat("a");
        assertThat(lease(g1, "a")).isGreaterThanOrEqualTo(beforeBeat + 59_000.0);

        // "b" died: nothing carries its lease, which lapses after the second it asked for. A beat
        // after that (a loader that comes back) does not bring it back, since collection may
        // already have marked the generation.
        Thread.sleep(1_200);
        // control-api served throughout: no outage window an earlier test of this context left
        // (within one, a lapsed lease is carried: ControlPlaneOutageTest) and a fresh tick
        servedThroughout();
        heartbeat("b");
        assertThat(lease(g1, "b")).isLessThan((double) System.currentTimeMillis());

        // g1 is retired and only the live loader "a" still holds it.
        GcReport kept = collectGarbage();
        assertThat(kept.getCollected()).isEmpty();
        assertThat(kept.getKept()).contains(g1, g2);
        assertThat(lease(g1, "b")).isNull();
        releaseLease(g1, "a");
        GcReport collected = collectGarbage();
        assertThat(collected.getCollected()).containsExactly(g1);
    }

    @Test
    void aLoaderThatPostAppliesHoldsNoLeaseOnAnotherGenerationOfItsModel() {
        long g1 = publish(model, 1);
        registerInGroup("a", 1L << 20);
        updateEach(g1, "a");
        for (String holder : List.of("ckpt", "other-loader")) {
            ok(
                    call(
                            "POST",
                            generationPath(model, g1) + "/leases",
                            LOADER,
                            new LeaseRequest(holder, 300)),
                    Lease.class);
        }
        long g2 = publish(model, 2);

        // Until its POST_APPLIED the loader may still need g1 (the update can fail and resume it),
        // so its lease holds; the report that ends its update releases it, with no call of its
        // own. Other holders keep theirs.
        ok(prepare(g2, "a", null), UpdatePreparation.class);
        reportEach(g2, ReportedPhase.PREPARED, "a");
        reportEach(g2, ReportedPhase.APPLIED, "a");
        assertThat(lease(g1, "a")).isNotNull();
        reportEach(g2, ReportedPhase.POST_APPLIED, "a");

        assertThat(lease(g1, "a")).isNull();
        assertThat(lease(g1, "ckpt")).isNotNull();
        assertThat(lease(g1, "other-loader")).isNotNull();
        assertThat(lease(g2, "a")).isNotNull();
        releaseLease(g1, "ckpt");
        releaseLease(g1, "other-loader");
        GcReport report = collectGarbage();
        assertThat(report.getCollected()).containsExactly(g1);
        assertThat(report.getKept()).containsExactly(g2);
    }

    /** Every one of {@code instances} prepares, applies and post-applies {@code generation}. */
    private void updateEach(long generation, String... instances) {
        for (String instance : instances) {
            ok(prepare(generation, instance, null), UpdatePreparation.class);
        }
        for (ReportedPhase phase :
                List.of(
                        ReportedPhase.PREPARED,
                        ReportedPhase.APPLIED,
                        ReportedPhase.POST_APPLIED)) {
            reportEach(generation, phase, instances);
        }
    }

    /**
     * An accepted report of {@code phase} by each of {@code instances}, in turn; the first to apply
     * says it read every object whole, matching the checksums {@link #publish} registered (as the
     * only loader of its group does).
     */
    private void reportEach(long generation, ReportedPhase phase, String... instances) {
        for (String instance : instances) {
            PhaseReport report = new PhaseReport(instance, phase);
            report.setEpoch(epochs.get(instance));
            if (phase == ReportedPhase.APPLIED && instance.equals(instances[0])) {
                report.setChecksums(wholeObjectsRead(generation).encode());
            }
            ok(
                    call(
                            "POST",
                            sessionPath(model, generation, GROUP) + "/reports",
                            LOADER,
                            report),
                    UpdateSession.class);
        }
    }

    private RangeChecksums wholeObjectsRead(long generation) {
        int registered = Crc32c.parse("crc32c:0badf00d");
        String prefix = model + "/" + generation + "/";
        List<RangeChecksums.Entry> read = new ArrayList<>();
        for (StoredFragment f : fragments(model, generation)) {
            read.add(
                    new RangeChecksums.Entry(
                            f.getKey().substring(prefix.length()), 0, f.getBytes(), registered));
        }
        return new RangeChecksums(read);
    }

    private void releaseLease(long generation, String holder) {
        assertThat(
                        call(
                                        "DELETE",
                                        generationPath(model, generation) + "/leases/" + holder,
                                        LOADER,
                                        null)
                                .statusCode())
                .isEqualTo(204);
    }

    private GcReport collectGarbage() {
        return ok(call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null), GcReport.class);
    }

    private void heartbeat(String instance) {
        assertThat(
                        call("POST", "/api/v1/loaders/" + instance + "/heartbeat", LOADER, null)
                                .statusCode())
                .isEqualTo(200);
    }

    @Test
    void aLoaderThePlanHasNoPartForIsRefusedAndHoldsNoLease() {
        long g = publish(model, 1);
        registerInGroup("a", 1L << 20);

        assertProblem(prepare(g, "z", null), 409, "not-a-participant");

        assertThat(lease(g, "z")).isNull();
        assertProblem(get(sessionPath(model, g, GROUP), OPERATOR), 404, "session-not-found");
    }

    /**
     * The loaders' own flow of a retry: one loader failed attempt 1 (RESUMED_OLD) while the other
     * had only prepared. A new prepare by the failed one is refused while the other may still act
     * in attempt 1; the other's own prepare (its new update run: its part in attempt 1 is over)
     * starts attempt 2, which the first then joins. A session stored before attempts were counted
     * (no attempt in its hash) is attempt 1.
     */
    @Test
    void aLoadersNewPrepareRetriesTheFailedAttemptOnceNoMemberCanStillActInIt() throws Exception {
        long g = publish(model, 1);
        registerInGroup("a", 1L << 20);
        registerInGroup("b", 1L << 20);
        ok(prepare(g, "a", null), UpdatePreparation.class);
        assertThat(ok(prepare(g, "b", null), UpdatePreparation.class).getSession().getAttempt())
                .isEqualTo(1);
        PhaseReport failed = new PhaseReport("a", ReportedPhase.FAILED);
        failed.setEpoch(epochs.get("a"));
        failed.setAttempt(1);
        failed.setError("read of m/1/x@0 returned 12 of 4096 bytes");
        UpdateSession ended =
                ok(
                        call("POST", sessionPath(model, g, GROUP) + "/reports", LOADER, failed),
                        UpdateSession.class);
        assertThat(ended.getState()).isEqualTo(SessionState.RESUMED_OLD);
        // as a session stored before attempts were counted holds it
        redis.opsForHash()
                .delete(keys.session(new SessionKey(new GenerationId(model, g), GROUP)), "attempt");

        HttpResponse<String> refused = prepare(g, "a", null);
        assertProblem(refused, 409, "session-closed");
        JsonNode problem = json.readTree(refused.body());
        assertThat(problem.get("attempt").asInt()).isEqualTo(1);
        assertThat(problem.get("waitingFor").toString()).isEqualTo("[\"b\"]");

        UpdatePreparation retried = ok(prepare(g, "b", null), UpdatePreparation.class);
        assertThat(retried.getSession().getState()).isEqualTo(SessionState.PREPARING);
        assertThat(retried.getSession().getAttempt()).isEqualTo(2);
        UpdatePreparation joined = ok(prepare(g, "a", null), UpdatePreparation.class);
        assertThat(joined.getSession().getAttempt()).isEqualTo(2);
        assertThat(joined.getSession().getState()).isEqualTo(SessionState.PREPARING);
    }

    /**
     * A failure after the applied barrier (an engine declined its fetched update, say) ends the
     * session PAUSED_REBUILD: another member may have installed. The same lives preparing that
     * generation again are refused at once, naming how the session ended, why, and what loads it
     * again, instead of joining the ended session and failing at their first report; the loader
     * that registers again (a new epoch) starts it afresh.
     */
    @Test
    void aPrepareThatWouldJoinASessionEndedAfterTheAppliedBarrierIsRefusedUntilARebuild()
            throws Exception {
        long g = publish(model, 1);
        registerInGroup("a", 1L << 20);
        ok(prepare(g, "a", null), UpdatePreparation.class);
        reportEach(g, ReportedPhase.PREPARED, "a");
        reportEach(g, ReportedPhase.APPLIED, "a");
        PhaseReport declined = new PhaseReport("a", ReportedPhase.FAILED);
        declined.setEpoch(epochs.get("a"));
        declined.setAttempt(1);
        declined.setFailingPeer("a");
        declined.setError("the engine declined to install generation " + g + ": session busy");
        UpdateSession ended =
                ok(
                        call("POST", sessionPath(model, g, GROUP) + "/reports", LOADER, declined),
                        UpdateSession.class);
        assertThat(ended.getState()).isEqualTo(SessionState.PAUSED_REBUILD);

        HttpResponse<String> refused = prepare(g, "a", null);
        assertProblem(refused, 409, "session-closed");
        JsonNode problem = json.readTree(refused.body());
        assertThat(problem.get("state").asText()).isEqualTo("PAUSED_REBUILD");
        assertThat(problem.get("attempt").asInt()).isEqualTo(1);
        assertThat(problem.get("detail").asText())
                .contains("ended PAUSED_REBUILD")
                .contains("declined to install generation " + g + ": session busy")
                .contains("register loader a again");

        registerInGroup("a", 1L << 20);
        UpdatePreparation restarted = ok(prepare(g, "a", null), UpdatePreparation.class);
        assertThat(restarted.getSession().getState()).isEqualTo(SessionState.PREPARING);
        assertThat(restarted.getSession().getAttempt()).isEqualTo(2);
    }
}
