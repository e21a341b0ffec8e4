package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.control.model.AssignmentRequest;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.PublisherAssignment;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.control.plan.EagerPlanWaits;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Slice;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.ApplicationContext;
import org.springframework.data.redis.core.StringRedisTemplate;
import tools.jackson.core.type.TypeReference;

/** The registry's TTLs and the plan cache, against real Redis and the real reshard planner. */
class RegistryAndPlanTest extends ControlApiTestSupport {

    @Autowired MeterRegistry meters;
    @Autowired StringRedisTemplate redis;
    @Autowired ApplicationContext context;

    @Test
    void publisherAssignmentsAreComputedOncePerDigestsAndByteBalanced() {
        String model = newModel();
        AssignmentRequest request =
                new AssignmentRequest(manifest(model), trainers("t0", "t1", "t2"));
        double misses = meters.counter("relay.assignments.cache", "result", "miss").count();
        double hits = meters.counter("relay.assignments.cache", "result", "hit").count();
        PublisherAssignment first =
                ok(
                        call("POST", "/api/v1/assignments", TRAINER, request),
                        PublisherAssignment.class);
        PublisherAssignment second =
                ok(
                        call("POST", "/api/v1/assignments", TRAINER, request),
                        PublisherAssignment.class);
        assertThat(second).isEqualTo(first);
        assertThat(meters.counter("relay.assignments.cache", "result", "miss").count() - misses)
                .isEqualTo(1.0);
        assertThat(meters.counter("relay.assignments.cache", "result", "hit").count() - hits)
                .isEqualTo(1.0);
        assertThat(first.getTensors()).hasSize(3);
        assertThat(first.getBytesPerNode().values().stream().mapToLong(Long::longValue).sum())
                .isEqualTo(256 * 32 * 2 + 32 * 32 * 2 + 32 * 2);
        assertThat(first.getBalance()).isGreaterThanOrEqualTo(1.0);
    }

    /** {@code segment}'s owner as a trainer registers it: on t0, 1 GiB, no store endpoint. */
    private SegmentOwner registeredByTrainer(String segment) {
        return ok(
                putSegment(
                        segment,
                        TRAINER,
                        new SegmentRegistration("t0", "127.0.0.1:7001", 1L << 30)),
                SegmentOwner.class);
    }

    @Test
    void segmentOwnersDropOutWithinOneTtl() throws Exception {
        String segment = "seg-" + newModel();
        SegmentOwner owner = registeredByTrainer(segment);
        assertThat(owner.getAlive()).isTrue();
        // The owner learns the incarnation mark of Redis, read fresh, from each answer.
        String mark = redis.opsForValue().get(PREFIX + "incarnation");
        assertThat(owner.getIncarnation()).isNotBlank().isEqualTo(mark);
        assertThat(live()).contains(segment);
        Thread.sleep(1200);
        SegmentOwner renewed =
                ok(
                        call("POST", "/api/v1/segments/" + segment + "/heartbeat", TRAINER, null),
                        SegmentOwner.class);
        assertThat(renewed.getIncarnation()).isEqualTo(mark);
        Thread.sleep(1200);
        assertThat(live()).as("heartbeat renewed the TTL").contains(segment);
        Thread.sleep(2100);
        assertThat(live()).as("dead within one TTL (2 s)").doesNotContain(segment);
        assertThat(ok(get("/api/v1/segments/" + segment, OPERATOR), SegmentOwner.class).getAlive())
                .isFalse();
        assertProblem(
                call("POST", "/api/v1/segments/nobody/heartbeat", TRAINER, null),
                404,
                "segment-not-found");
        assertDeletedThenUnknown("/api/v1/segments/" + segment, OPERATOR, "segment-not-found");
    }

    /**
     * Issue 47: on Mooncake an owner registers the store endpoint its agent's replicas are named
     * by, which control-api keeps (and answers) until the owner registers again; a registration
     * without one (the built-in engine) keeps none, and a malformed one is refused naming it.
     */
    @Test
    void aSegmentOwnersStoreEndpointIsKeptAndAMalformedOneRefused() {
        String segment = "seg-" + newModel();
        SegmentRegistration r = new SegmentRegistration("t0", "127.0.0.1:7001", 1L << 30);
        SegmentOwner owner =
                ok(
                        putSegment(segment, TRAINER, r.storeEndpoint("127.0.0.1:15012")),
                        SegmentOwner.class);
        assertThat(owner.getStoreEndpoint()).isEqualTo("127.0.0.1:15012");
        assertThat(ok(get("/api/v1/segments/" + segment, OPERATOR), SegmentOwner.class))
                .extracting(SegmentOwner::getStoreEndpoint)
                .isEqualTo("127.0.0.1:15012");
        SegmentOwner builtin = registeredByTrainer(segment);
        assertThat(builtin.getStoreEndpoint()).as("registered again without one").isNull();
        var refused = putSegment(segment, TRAINER, r.storeEndpoint("not an endpoint"));
        assertProblem(refused, 400, "invalid-request");
        assertThat(refused.body()).contains("storeEndpoint");
        assertThat(call("DELETE", "/api/v1/segments/" + segment, OPERATOR, null).statusCode())
                .isEqualTo(204);
    }

    private List<String> live() {
        List<SegmentOwner> owners =
                json.readValue(
                        get("/api/v1/segments", OPERATOR).body(),
                        new TypeReference<List<SegmentOwner>>() {});
        return owners.stream().map(SegmentOwner::getSegment).toList();
    }

    /**
     * A deregistration: DELETE {@code path} (with {@code token}) answers 204, and an operator's
     * read of it then answers 404 {@code unknown}.
     */
    private void assertDeletedThenUnknown(String path, String token, String unknown) {
        assertThat(call("DELETE", path, token, null).statusCode()).isEqualTo(204);
        assertProblem(get(path, OPERATOR), 404, unknown);
    }

    @Test
    void loadersGetANewEpochOnEveryRegistrationAndInvalidPlacementsAreRefused() {
        String model = newModel();
        String instance = "inst-" + model;
        // Epochs come from one counter for all loaders (unique, so a report can be told foreign).
        long first = registerLoader(instance, compatLoader(model, "g", "r0", 2)).getEpoch();
        assertThat(first).isPositive();
        assertThat(registerLoader(instance, compatLoader(model, "g", "r0", 2)).getEpoch())
                .isEqualTo(first + 1);
        Loader beat =
                ok(
                        call("POST", "/api/v1/loaders/" + instance + "/heartbeat", LOADER, null),
                        Loader.class);
        assertThat(beat.getAlive()).isTrue();
        List<Loader> inGroup =
                json.readValue(
                        get("/api/v1/loaders?model=" + model + "&group=g", OPERATOR).body(),
                        new TypeReference<List<Loader>>() {});
        assertThat(inGroup).extracting(Loader::getInstance).containsExactly(instance);
        // A loader that reported no generation and advertised no endpoint has neither member: the
        // contract declares nothing nullable, so an answer never carries "generation": null.
        String listed = get("/api/v1/loaders?model=" + model + "&group=g", OPERATOR).body();
        assertThat(inGroup.get(0).getGeneration()).isNull();
        assertThat(listed).doesNotContain(":null", "\"generation\"");

        LoaderRegistration compatWithFragments = compatLoader(model, "g", "r0", 1);
        compatWithFragments
                .getWorkers()
                .get(0)
                .setFragments(
                        List.of(
                                new TargetFragment(
                                        "embed.weight",
                                        List.of(0L, 0L),
                                        List.of(1L, 32L),
                                        "safetensors",
                                        0L,
                                        List.of(64L, 2L))));
        assertProblem(
                call("PUT", "/api/v1/loaders/bad-" + instance, LOADER, compatWithFragments),
                400,
                "invalid-placement");
        LoaderRegistration twoSegments = compatLoader(model, "g", "r0", 1);
        twoSegments
                .getWorkers()
                .get(0)
                .setBuffers(
                        List.of(
                                new ReceiveBuffer("a", "seg-a", 10L),
                                new ReceiveBuffer("b", "seg-b", 10L)));
        assertProblem(
                call("PUT", "/api/v1/loaders/bad-" + instance, LOADER, twoSegments),
                400,
                "invalid-placement");
        assertProblem(
                call(
                        "PUT",
                        "/api/v1/loaders/" + instance,
                        TRAINER,
                        compatLoader(model, "g", "r0", 1)),
                403,
                "forbidden");
        assertDeletedThenUnknown("/api/v1/loaders/" + instance, LOADER, "loader-not-found");
    }

    @Test
    void aPlanIsComputedOnceUnderSixteenConcurrentRequestsAndServedWholeAndSliced()
            throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        // the commit's background resolution must not find the group the test registers next
        EagerPlanWaits.awaitCommitResolutions(context);
        registerLoader("a-" + model, compatLoader(model, "grp", "r0-" + model, 2));
        registerLoader("b-" + model, compatLoader(model, "grp", "r1-" + model, 2));
        double missesBefore = meters.counter("relay.plans.cache", "result", "miss").count();

        String body = json.writeValueAsString(new PlanRequest(model, g1, "grp"));
        HttpClient http = HttpClient.newHttpClient();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        CountDownLatch start = new CountDownLatch(1);
        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            calls.add(
                    CompletableFuture.supplyAsync(
                            () -> {
                                try {
                                    start.await();
                                    return http.send(
                                            HttpRequest.newBuilder(uri("/api/v1/plans"))
                                                    .header("Authorization", "Bearer " + LOADER)
                                                    .header("Content-Type", "application/json")
                                                    .POST(HttpRequest.BodyPublishers.ofString(body))
                                                    .build(),
                                            HttpResponse.BodyHandlers.ofString());
                                } catch (Exception ex) {
                                    throw new IllegalStateException(ex);
                                }
                            },
                            pool));
        }
        start.countDown();
        List<PlanSummary> summaries = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> c : calls) {
            summaries.add(ok(c.get(60, TimeUnit.SECONDS), PlanSummary.class));
        }
        pool.shutdown();
        assertThat(summaries.stream().map(PlanSummary::getPlanId).distinct()).hasSize(1);
        assertThat(summaries.stream().filter(s -> !s.getCached())).hasSize(1);
        assertThat(meters.counter("relay.plans.cache", "result", "miss").count() - missesBefore)
                .isEqualTo(1.0);
        PlanSummary summary = summaries.get(0);
        assertThat(summary.getValid()).isTrue();
        assertThat(summary.getInstances()).containsExactly("a-" + model, "b-" + model);

        HttpResponse<byte[]> encoded =
                http.send(
                        HttpRequest.newBuilder(
                                        URI.create(
                                                uri("/api/v1/plans/"
                                                                + summary.getPlanId()
                                                                + "/encoded")
                                                        .toString()))
                                .header("Authorization", "Bearer " + LOADER)
                                .build(),
                        HttpResponse.BodyHandlers.ofByteArray());
        assertThat(encoded.statusCode()).isEqualTo(200);
        Plan plan = Plan.decode(encoded.body());
        assertThat(plan.sourceDigest()).isEqualTo(summary.getSourceDigest());
        HttpRequest.Builder sliceRequest =
                HttpRequest.newBuilder(
                                uri("/api/v1/plans/" + summary.getPlanId() + "/slices/a-" + model))
                        .header("Authorization", "Bearer " + LOADER);
        HttpResponse<byte[]> slice =
                http.send(sliceRequest.copy().build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(slice.statusCode()).isEqualTo(200);
        assertThat(Slice.decode(slice.body()).instance()).isEqualTo("a-" + model);
        // To a loader that accepts gzip, the same encoding goes out as compressed at plan time.
        HttpResponse<byte[]> gzipped =
                http.send(
                        sliceRequest.header("Accept-Encoding", "gzip").build(),
                        HttpResponse.BodyHandlers.ofByteArray());
        assertThat(gzipped.headers().firstValue("Content-Encoding")).hasValue("gzip");
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(gzipped.body()))) {
            assertThat(in.readAllBytes()).isEqualTo(slice.body());
        }
        assertProblem(
                get("/api/v1/plans/" + summary.getPlanId() + "/slices/nobody", LOADER),
                404,
                "slice-not-found");
        assertProblem(get("/api/v1/plans/" + "0".repeat(64), LOADER), 404, "plan-not-found");

        // The next generation with the same manifest and loaders reuses the plan.
        long g2 = publish(model, 2);
        PlanSummary reused = resolvePlan(model, g2, "grp");
        assertThat(reused.getPlanId()).isEqualTo(summary.getPlanId());
        assertThat(reused.getCached()).isTrue();
        assertProblem(
                call("POST", "/api/v1/plans", LOADER, new PlanRequest(model, g2, "empty-group")),
                409,
                "no-live-loaders");
    }
}
