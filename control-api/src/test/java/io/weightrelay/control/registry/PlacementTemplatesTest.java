package io.weightrelay.control.registry;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.reshard.placement.FragmentTemplate;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.JsonNode;

/**
 * Direct workers name their fragments by the digest of a stored template: stored once, checked with
 * each worker's buffers, never echoed; the plan still refuses what disagrees with the manifest,
 * naming instance, worker, tensor and fragment, and a resolve that finds the plan cached gives the
 * same plan.
 */
class PlacementTemplatesTest extends ControlApiTestSupport {

    private final String buffer = "params-" + newModel();

    /**
     * One rank's boxes of the test manifest, all bf16, packed in one buffer (named per test, so
     * each test's templates are its own: templates are shared by digest across models).
     */
    private FragmentTemplate rank(int r) {
        // embed.weight [256, 32] split by rows over two ranks; layer.0.* replicated
        return FragmentTemplate.of(
                List.of(
                        packed("embed.weight", new long[] {128L * r, 0}, new long[] {128, 32}, 0),
                        packed("layer.0.weight", new long[] {0, 0}, new long[] {32, 32}, 8192),
                        packed("layer.0.bias", new long[] {0}, new long[] {32}, 10240)));
    }

    /**
     * A box of a bf16 tensor at {@code bufferOffset} of the test's buffer, its elements packed row
     * after row (strides {@code [64, 2]} for 32 columns).
     */
    private FragmentTemplate.Entry packed(
            String tensor, long[] offset, long[] shape, long bufferOffset) {
        long[] strides = new long[shape.length];
        long stride = 2;
        for (int d = shape.length - 1; d >= 0; d--) {
            strides[d] = stride;
            stride *= shape[d];
        }
        return new FragmentTemplate.Entry(tensor, offset, shape, buffer, bufferOffset, strides);
    }

    private HttpResponse<String> putTemplate(String digest, byte[] body) {
        return send(
                HttpRequest.newBuilder(uri("/api/v1/placements/" + digest))
                        .header("Authorization", "Bearer " + LOADER)
                        .header("Content-Type", "application/octet-stream")
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(body)));
    }

    private LoaderRegistration loader(
            String model, String node, String instance, long bufferBytes) {
        List<WorkerPlacement> workers = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            String id = instance + "-r" + r;
            WorkerPlacement w =
                    new WorkerPlacement(
                            id,
                            node,
                            "eth0",
                            ConsumeMode.DIRECT,
                            List.of(new ReceiveBuffer(buffer, "rx-" + id, bufferBytes)));
            w.setRank(r);
            w.setPlacement(rank(r).digest());
            workers.add(w);
        }
        return new LoaderRegistration(model, "g", node, workers);
    }

    @Test
    void templatesAreStoredOnceAndWorkersNameThemByDigest() {
        String model = newModel();
        long generation = publish(model, 1);
        String a = "a-" + model;
        String b = "b-" + model;

        // Not stored yet: refused, naming what to upload.
        HttpResponse<String> missing = putLoader(a, loader(model, "n0", a, 12288));
        assertProblem(missing, 409, "placement-template-not-found");
        JsonNode problem = json.readTree(missing.body());
        assertThat(problem.path("instanceId").asString()).isEqualTo(a);
        List<String> digests = new ArrayList<>();
        problem.path("missing").forEach(d -> digests.add(d.asString()));
        assertThat(digests).containsExactlyInAnyOrder(rank(0).digest(), rank(1).digest());

        // A body stored under another digest, or not a template, is refused.
        assertProblem(
                putTemplate(rank(0).digest(), rank(1).encoded()), 400, "placement-digest-mismatch");
        byte[] junk = {1, 2, 3};
        assertProblem(
                putTemplate(io.weightrelay.reshard.codec.Digests.sha256Hex(junk), junk),
                400,
                "invalid-placement");
        for (int r = 0; r < 2; r++) {
            HttpResponse<String> stored = putTemplate(rank(r).digest(), rank(r).encoded());
            assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
            assertThat(json.readTree(stored.body()).path("fragments").asInt()).isEqualTo(3);
        }
        HttpResponse<String> forbidden =
                send(
                        HttpRequest.newBuilder(uri("/api/v1/placements/" + rank(0).digest()))
                                .header("Authorization", "Bearer " + TRAINER)
                                .header("Content-Type", "application/octet-stream")
                                .PUT(HttpRequest.BodyPublishers.ofByteArray(rank(0).encoded())));
        assertProblem(forbidden, 403, "forbidden");

        // Two instances of the same layout register with the same two templates.
        Loader first = registerLoader(a, loader(model, "n0", a, 12288));
        registerLoader(b, loader(model, "n1", b, 12288));
        assertThat(first.getWorkers())
                .allSatisfy(
                        w -> {
                            assertThat(w.getFragments()).isNullOrEmpty();
                            assertThat(w.getFragmentCount()).isEqualTo(3);
                        });
        assertThat(first.getWorkers())
                .extracting(WorkerPlacement::getPlacement)
                .containsExactly(rank(0).digest(), rank(1).digest());

        // Heartbeats and listings carry no fragment; listings page by instance.
        HttpResponse<String> beat =
                call("POST", "/api/v1/loaders/" + a + "/heartbeat", LOADER, null);
        assertThat(beat.statusCode()).isEqualTo(200);
        assertThat(beat.body()).doesNotContain("workers", "fragments", "embed.weight");
        List<Loader> page =
                json.readValue(
                        get("/api/v1/loaders?model=" + model + "&limit=1", OPERATOR).body(),
                        new TypeReference<List<Loader>>() {});
        assertThat(page).extracting(Loader::getInstance).containsExactly(a);
        List<Loader> next =
                json.readValue(
                        get("/api/v1/loaders?model=" + model + "&limit=1&after=" + a, OPERATOR)
                                .body(),
                        new TypeReference<List<Loader>>() {});
        assertThat(next).extracting(Loader::getInstance).containsExactly(b);
        assertThat(get("/api/v1/loaders?model=" + model, OPERATOR).body())
                .doesNotContain("embed.weight");

        // A digest nobody stored is not found (a read, unlike a registration naming it).
        assertProblem(
                get("/api/v1/placements/" + "0".repeat(64), OPERATOR),
                404,
                "placement-template-unknown");

        // The stored bytes come back as stored.
        HttpResponse<byte[]> back =
                sendBytes(
                        HttpRequest.newBuilder(uri("/api/v1/placements/" + rank(1).digest()))
                                .header("Authorization", "Bearer " + OPERATOR)
                                .GET());
        assertThat(back.body()).isEqualTo(rank(1).encoded());

        // The plan takes the templates' fragments; asked again it is the same, cached plan.
        PlanSummary cold = resolvePlan(model, generation, "g");
        assertThat(cold.getValid()).isTrue();
        assertThat(cold.getInstances()).containsExactly(a, b);
        PlanSummary warm = resolvePlan(model, generation, "g");
        assertThat(warm.getPlanId()).isEqualTo(cold.getPlanId());
        assertThat(warm.getCached()).isTrue();
    }

    @Test
    void aTemplateIsCheckedWithEachWorkersBuffersAndAgainstTheManifest() {
        String model = newModel();
        long generation = publish(model, 1);
        for (int r = 0; r < 2; r++) {
            putTemplate(rank(r).digest(), rank(r).encoded());
        }
        String small = "small-" + model;
        // The same templates in a buffer one byte too small: refused at registration, named.
        HttpResponse<String> refused = putLoader(small, loader(model, "n0", small, 10303));
        assertProblem(refused, 400, "placement-outside-buffer");
        JsonNode body = json.readTree(refused.body());
        assertThat(body.path("instanceId").asString()).isEqualTo(small);
        assertThat(body.path("worker").asString()).isEqualTo(small + "-r0");
        assertThat(body.path("tensor").asString()).isEqualTo("layer.0.bias");
        assertThat(body.path("fragment").asInt()).isEqualTo(2);

        // A template naming a tensor the manifest lacks passes registration, not the plan.
        FragmentTemplate stray =
                FragmentTemplate.of(
                        List.of(
                                packed(
                                        "layer.9.weight",
                                        new long[] {0, 0},
                                        new long[] {32, 32},
                                        0)));
        putTemplate(stray.digest(), stray.encoded());
        String odd = "odd-" + model;
        LoaderRegistration registration = loader(model, "n0", odd, 12288);
        registration.getWorkers().get(1).setPlacement(stray.digest());
        registerLoader(odd, registration);
        for (int attempt = 0; attempt < 2; attempt++) {
            HttpResponse<String> plan =
                    call("POST", "/api/v1/plans", LOADER, new PlanRequest(model, generation, "g"));
            assertProblem(plan, 409, "placement-unknown-tensor");
            JsonNode p = json.readTree(plan.body());
            assertThat(p.path("instanceId").asString()).isEqualTo(odd);
            assertThat(p.path("worker").asString()).isEqualTo(odd + "-r1");
            assertThat(p.path("tensor").asString()).isEqualTo("layer.9.weight");
            assertThat(p.path("fragment").asInt()).isZero();
        }
    }

    private HttpResponse<byte[]> sendBytes(HttpRequest.Builder request) {
        try {
            return java.net.http.HttpClient.newHttpClient()
                    .send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
