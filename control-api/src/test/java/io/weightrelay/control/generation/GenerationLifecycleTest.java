package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.common.model.StoredFragment;
import io.weightrelay.api.control.model.GcReport;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.LeaseRequest;
import io.weightrelay.api.control.model.OpenGenerationRequest;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.api.control.model.RegisteredObject;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.SharedTestStore;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.reshard.manifest.GenerationId;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.StringRedisTemplate;
import tools.jackson.core.type.TypeReference;

/** Generations against real Redis and a real store: commit, abort, leases and GC. */
class GenerationLifecycleTest extends ControlApiTestSupport {

    @RegisterExtension static final SharedTestStore store = new SharedTestStore(STORE_PREFIX);

    @Autowired StringRedisTemplate redis;
    @Autowired RedisKeys keys;
    @Autowired MeterRegistry meters;

    /** The model of this test: a new one per test. */
    private final String model = newModel();

    private String path(long generation) {
        return "/api/v1/models/" + model + "/generations/" + generation;
    }

    private Generation generation(long generation) {
        return ok(get(path(generation), OPERATOR), Generation.class);
    }

    private Long active() {
        HttpResponse<String> r = get("/api/v1/models/" + model + "/generations/active", LOADER);
        return r.statusCode() == 404 ? null : ok(r, Generation.class).getGeneration();
    }

    private List<StoredFragment> putAll(long generation) {
        List<StoredFragment> fragments = fragments(model, generation);
        for (StoredFragment f : fragments) {
            store.get().put(f.getKey(), f.getBytes());
        }
        return fragments;
    }

    /** Opens the generation of {@code step}; returns its id. */
    private long opened(long step) {
        return open(model, step).getGeneration().getGeneration();
    }

    private HttpResponse<String> openAtStep7() {
        return requestOpen(
                model, new OpenGenerationRequest(7L, manifest(model), trainers("t0", "t1")));
    }

    @Test
    void openIsIdempotentByTrainerStepAndAssignsEveryTensor() {
        HttpResponse<String> first = openAtStep7();
        assertThat(first.statusCode()).isEqualTo(201);
        OpenedGeneration opened = json.readValue(first.body(), OpenedGeneration.class);
        assertThat(opened.getGeneration().getState()).isEqualTo(GenerationState.OPEN);
        assertThat(opened.getGeneration().getObjectsExpected()).isGreaterThan(3L);
        assertThat(opened.getAssignment().getTensors()).hasSize(3);
        assertThat(opened.getAssignment().getBytesPerNode()).containsOnlyKeys("t0", "t1");

        HttpResponse<String> again = openAtStep7();
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(
                        json.readValue(again.body(), OpenedGeneration.class)
                                .getGeneration()
                                .getGeneration())
                .isEqualTo(opened.getGeneration().getGeneration());

        var other = manifest(model);
        other.getTensors().add(tensor("extra", 4));
        assertProblem(
                requestOpen(model, new OpenGenerationRequest(7L, other, trainers("t0", "t1"))),
                409,
                "trainer-step-conflict");
    }

    /**
     * After Redis lost its data the id counter starts again; the trainer sends the newest id it was
     * given, so a new generation never gets the id of one the engines may still hold.
     */
    @Test
    void openWithAfterGenerationContinuesIdsAboveItAndAnIdempotentOpenIgnoresIt() {
        long first = opened(1);
        OpenGenerationRequest afterWipe =
                new OpenGenerationRequest(2L, manifest(model), trainers("t0", "t1"))
                        .afterGeneration(first + 40);
        HttpResponse<String> opened = requestOpen(model, afterWipe);
        assertThat(opened.statusCode()).isEqualTo(201);
        long raised =
                json.readValue(opened.body(), OpenedGeneration.class)
                        .getGeneration()
                        .getGeneration();
        assertThat(raised).isEqualTo(first + 41);

        // a floor below the counter changes nothing; the same step answers the same generation
        OpenGenerationRequest low =
                new OpenGenerationRequest(3L, manifest(model), trainers("t0", "t1"))
                        .afterGeneration(1L);
        assertThat(
                        json.readValue(requestOpen(model, low).body(), OpenedGeneration.class)
                                .getGeneration()
                                .getGeneration())
                .isEqualTo(raised + 1);
        HttpResponse<String> again = requestOpen(model, afterWipe.afterGeneration(first + 1000));
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(
                        json.readValue(again.body(), OpenedGeneration.class)
                                .getGeneration()
                                .getGeneration())
                .isEqualTo(raised);
    }

    @Test
    void commitRefusesMissingObjectAndLeavesActiveAlone() {
        long g1 = publish(model, 1);
        long g2 = opened(2);
        List<StoredFragment> fragments = fragments(model, g2);
        List<RegisteredObject> allButOne = new ArrayList<>();
        for (StoredFragment f : fragments.subList(1, fragments.size())) {
            allButOne.add(object(f.getKey(), f.getBytes()));
        }
        assertThat(register(model, g2, allButOne).statusCode()).isEqualTo(200);

        HttpResponse<String> refused = commit(model, g2);
        assertProblem(refused, 409, "generation-incomplete");
        assertThat(refused.body()).contains("missing " + fragments.get(0).getKey().split("/")[2]);
        assertThat(active()).isEqualTo(g1);
        assertThat(generation(g2).getState()).isEqualTo(GenerationState.OPEN);
        assertThat(generation(g1).getState()).isEqualTo(GenerationState.ACTIVE);
    }

    @Test
    void wrongSizesAreRefusedAtRegistrationAndAgainAtCommit() {
        long g1 = publish(model, 1);
        long g2 = opened(2);
        List<StoredFragment> fragments = registerAll(model, g2);
        StoredFragment first = fragments.get(0);

        assertProblem(
                register(
                        model,
                        g2,
                        List.of(
                                new RegisteredObject(
                                        first.getKey(), first.getBytes(), "crc32c:12345678"))),
                409,
                "object-conflict");
        assertThat(
                        register(model, g2, List.of(object(first.getKey(), first.getBytes())))
                                .statusCode())
                .as("registering the same object again is a no-op")
                .isEqualTo(200);
        long g3 = opened(3);
        StoredFragment f3 = fragments(model, g3).get(0);
        assertProblem(
                register(model, g3, List.of(object(f3.getKey(), f3.getBytes() - 1))),
                400,
                "object-size-mismatch");

        // A record that got corrupted behind the API's back is still caught by the commit script.
        String fragment = first.getKey().substring((model + "/" + g2 + "/").length());
        redis.opsForHash()
                .put(
                        keys.objects(new GenerationId(model, g2)),
                        fragment,
                        (first.getBytes() + 8) + "|crc32c:0badf00d|");
        HttpResponse<String> refused = commit(model, g2);
        assertProblem(refused, 409, "generation-incomplete");
        assertThat(refused.body()).contains("\"wrong\":1");
        assertThat(active()).isEqualTo(g1);
    }

    @Test
    void repeatedCommitIsAConflictAndChangesNothing() {
        long g1 = publish(model, 1);
        Generation before = generation(g1);
        assertProblem(commit(model, g1), 409, "commit-conflict");
        Generation after = generation(g1);
        assertThat(after.getState()).isEqualTo(GenerationState.ACTIVE);
        assertThat(after.getCommittedAt()).isEqualTo(before.getCommittedAt());
    }

    @Test
    void concurrentCommitsLeaveExactlyOneActiveAndAConsistentHistory() throws Exception {
        for (int round = 0; round < 4; round++) {
            long a = opened(round * 2L);
            long b = opened(round * 2L + 1);
            registerAll(model, a);
            registerAll(model, b);
            CountDownLatch start = new CountDownLatch(1);
            CompletableFuture<HttpResponse<String>> ca =
                    CompletableFuture.supplyAsync(() -> await(start, () -> commit(model, a)));
            CompletableFuture<HttpResponse<String>> cb =
                    CompletableFuture.supplyAsync(() -> await(start, () -> commit(model, b)));
            start.countDown();
            int sa = ca.get(30, TimeUnit.SECONDS).statusCode();
            int sb = cb.get(30, TimeUnit.SECONDS).statusCode();
            assertThat(sb).as("the newer generation always wins").isEqualTo(200);
            assertThat(sa).isIn(200, 409);
            if (sa == 409) {
                assertProblem(ca.get(), 409, "commit-conflict");
            }
            List<Generation> all =
                    json.readValue(
                            get("/api/v1/models/" + model + "/generations", OPERATOR).body(),
                            new TypeReference<List<Generation>>() {});
            assertThat(all.stream().filter(g -> g.getState() == GenerationState.ACTIVE))
                    .singleElement()
                    .extracting(Generation::getGeneration)
                    .isEqualTo(b);
            assertThat(active()).isEqualTo(b);
            Generation ga = generation(a);
            assertThat(ga.getState())
                    .isEqualTo(sa == 200 ? GenerationState.RETIRED : GenerationState.OPEN);
            for (Generation g : all) {
                if (g.getState() == GenerationState.RETIRED) {
                    assertThat(g.getCommittedAt()).isNotNull();
                    assertThat(g.getRetiredAt()).isAfterOrEqualTo(g.getCommittedAt());
                }
            }
        }
    }

    /** A rollout syncing trainer step S (VeRL) finds that step's generation, not the active one. */
    @Test
    void aTrainerStepNamesTheGenerationItsLatestOpenMade() {
        long g1 = publish(model, 1);
        long aborted = opened(2);
        call("POST", path(aborted) + "/abort", TRAINER, "{\"reason\":\"retried\"}");
        long g2 = opened(2);
        String list = "/api/v1/models/" + model + "/generations?trainerStep=";
        Generation[] step2 = ok(get(list + 2, LOADER), Generation[].class);
        assertThat(step2).extracting(Generation::getGeneration).containsExactly(g2);
        assertThat(step2[0].getState()).isEqualTo(GenerationState.OPEN);
        assertThat(ok(get(list + 1, LOADER), Generation[].class))
                .extracting(Generation::getGeneration, Generation::getState)
                .containsExactly(tuple(g1, GenerationState.ACTIVE));
        assertThat(ok(get(list + 9, LOADER), Generation[].class)).isEmpty();
        assertThat(ok(get(list + 2 + "&state=ACTIVE", LOADER), Generation[].class)).isEmpty();
    }

    @Test
    void abortRemovesTheObjectsFromTheStoreAndKeepsTheActiveGeneration() {
        long g1 = publish(model, 1);
        List<StoredFragment> kept = putAll(g1);
        long g2 = opened(2);
        List<StoredFragment> doomed = putAll(g2);
        register(model, g2, List.of(object(doomed.get(0).getKey(), doomed.get(0).getBytes())));
        doomed.forEach(f -> assertThat(store.get().exists(f.getKey())).isTrue());

        Generation aborted =
                ok(
                        call(
                                "POST",
                                path(g2) + "/abort",
                                TRAINER,
                                "{\"reason\":\"rank 3 failed\"}"),
                        Generation.class);
        assertThat(aborted.getState()).isEqualTo(GenerationState.ABORTED);
        assertThat(aborted.getAbortReason()).isEqualTo("rank 3 failed");
        for (StoredFragment f : doomed) {
            assertThat(store.get().exists(f.getKey())).as(f.getKey()).isFalse();
            assertThat(redis.hasKey(STORE_PREFIX + "obj:" + f.getKey())).isFalse();
        }
        kept.forEach(f -> assertThat(store.get().exists(f.getKey())).isTrue());
        assertThat(active()).isEqualTo(g1);
        assertProblem(call("POST", path(g1) + "/abort", TRAINER, null), 409, "generation-not-open");
        assertProblem(commit(model, g2), 409, "commit-conflict");
        assertThat(opened(2))
                .as("retrying an aborted trainer step opens a fresh generation")
                .isGreaterThan(g2);
    }

    @Test
    void aLostGenerationIsNeverLeasedPlannedUpdatedOrSavedAndGoesOnceSuperseded() {
        long g1 = publishIn(model, 1, "seg-x");
        long g2 = publishIn(model, 2, "seg-x");
        String lost = "{\"segment\":\"seg-x\",\"objects\":3,\"reason\":\"owner restarted\"}";
        assertProblem(call("POST", path(g2) + "/lost", LOADER, lost), 403, "forbidden");
        // Only the segment's owner (or an operator) reports its bytes gone, never a trainer.
        assertProblem(call("POST", path(g2) + "/lost", TRAINER, lost), 403, "forbidden");
        Generation g = ok(call("POST", path(g2) + "/lost", OWNER, lost), Generation.class);
        assertThat(g.getState()).isEqualTo(GenerationState.LOST);
        assertThat(g.getLostReason()).contains("seg-x").contains("3 object(s)");
        assertThat(g.getLostAt()).isNotNull();
        assertThat(ok(call("POST", path(g2) + "/lost", OWNER, lost), Generation.class))
                .as("idempotent")
                .isEqualTo(g);
        // it was active: the newest earlier whole generation is active again
        assertThat(active()).isEqualTo(g1);
        assertThat(generation(g1).getState()).isEqualTo(GenerationState.ACTIVE);
        assertThat(generation(g2).getState()).isEqualTo(GenerationState.LOST);
        assertProblem(
                call("POST", path(g2) + "/leases", LOADER, new LeaseRequest("l", 60)),
                409,
                "generation-not-leasable");
        assertProblem(
                call(
                        "POST",
                        "/api/v1/plans",
                        LOADER,
                        "{\"model\":\"" + model + "\",\"generation\":" + g2 + ",\"group\":\"g\"}"),
                409,
                "generation-lost");
        assertProblem(
                call(
                        "PUT",
                        path(g2) + "/updates/g",
                        LOADER,
                        "{\"instances\":[\"a\"],\"planId\":\"" + "0".repeat(64) + "\"}"),
                409,
                "generation-lost");
        assertProblem(
                call("POST", path(g2) + "/checkpoints", OPERATOR, "{\"directory\":\"/tmp/never\"}"),
                409,
                "generation-lost");
        assertProblem(call("POST", path(999) + "/lost", OWNER, lost), 404, "generation-not-found");

        // an open generation whose bytes are gone is aborted, never committed
        long g3 = opened(3);
        registerAllIn(model, g3, "seg-x");
        Generation aborted = ok(call("POST", path(g3) + "/lost", OWNER, lost), Generation.class);
        assertThat(aborted.getState()).isEqualTo(GenerationState.ABORTED);
        assertThat(aborted.getAbortReason()).contains("seg-x");

        // with no whole generation before it, the pointer stays on the lost one, which says so
        Generation again = ok(call("POST", path(g1) + "/lost", OWNER, lost), Generation.class);
        assertThat(again.getState()).isEqualTo(GenerationState.LOST);
        assertThat(active()).isEqualTo(g1);

        long g4 = publish(model, 4);
        assertThat(generation(g4).getState()).isEqualTo(GenerationState.ACTIVE);
        GcReport report =
                ok(call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null), GcReport.class);
        assertThat(report.getCollected()).contains(g1, g2, g3);
        assertThat(active()).isEqualTo(g4);
    }

    @Test
    void garbageCollectionNeverRemovesALeasedGeneration() {
        long g1 = publish(model, 1);
        List<StoredFragment> f1 = putAll(g1);
        long g2 = publish(model, 2);
        List<StoredFragment> f2 = putAll(g2);
        long g3 = publish(model, 3);
        List<StoredFragment> f3 = putAll(g3);
        ok(
                call("POST", path(g1) + "/leases", LOADER, new LeaseRequest("loader-a", 300)),
                io.weightrelay.api.control.model.Lease.class);

        GcReport report =
                ok(call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null), GcReport.class);
        assertThat(report.getCollected()).containsExactly(g2);
        assertThat(report.getKept()).contains(g1, g3);
        assertThat(report.getObjectsRemoved()).isEqualTo(f2.size());
        f2.forEach(f -> assertThat(store.get().exists(f.getKey())).isFalse());
        f1.forEach(f -> assertThat(store.get().exists(f.getKey())).isTrue());
        f3.forEach(f -> assertThat(store.get().exists(f.getKey())).isTrue());
        assertProblem(get(path(g2), OPERATOR), 404, "generation-not-found");
        assertThat(generation(g1).getState()).isEqualTo(GenerationState.RETIRED);

        assertThat(call("DELETE", path(g1) + "/leases/loader-a", LOADER, null).statusCode())
                .isEqualTo(204);
        report =
                ok(call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null), GcReport.class);
        assertThat(report.getCollected()).containsExactly(g1);
        f1.forEach(f -> assertThat(store.get().exists(f.getKey())).isFalse());
        assertThat(active()).isEqualTo(g3);
        assertProblem(
                call("POST", path(g1) + "/leases", LOADER, new LeaseRequest("late", 60)),
                404,
                "generation-not-found");
    }

    @Test
    void longPollAnswersAsSoonAsANewerGenerationIsActive() throws Exception {
        long g1 = publish(model, 1);
        assertThat(nextGeneration(model, g1, 1).statusCode()).isEqualTo(204);
        long g2 = opened(2);
        registerAll(model, g2);
        CompletableFuture<HttpResponse<String>> poll = pollNextGeneration(model, g1);
        Thread.sleep(300);
        long start = System.nanoTime();
        assertThat(commit(model, g2).statusCode()).isEqualTo(200);
        Generation next = ok(poll.get(20, TimeUnit.SECONDS), Generation.class);
        assertThat(next.getGeneration()).isEqualTo(g2);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(3000);
    }

    private static <T> T await(CountDownLatch latch, java.util.function.Supplier<T> call) {
        try {
            latch.await();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        return call.get();
    }
}
