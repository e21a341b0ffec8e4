package io.weightrelay.control.registry;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.redis.RedisKeys;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.StringRedisTemplate;
import tools.jackson.databind.JsonNode;

/**
 * Placements whose layout disagrees with itself or with the manifest fail closed, before any plan
 * exists: registration refuses what needs no manifest (400), the plan what the manifest refutes
 * (409), and an update session never starts on a plan that does not exist or is not valid. The
 * manifest is {@code embed.weight [256, 32]}, {@code layer.0.weight [32, 32]}, {@code layer.0.bias
 * [32]}, all bf16.
 */
class PlacementRulesTest extends ControlApiTestSupport {

    @Autowired StringRedisTemplate redis;
    @Autowired RedisKeys keys;

    private String model;
    private long generation;

    @BeforeEach
    void publishGeneration() {
        model = newModel();
        generation = publish(model, 1);
    }

    private static TargetFragment box(
            String tensor,
            List<Long> offset,
            List<Long> shape,
            long bufferOffset,
            Long... strides) {
        return new TargetFragment(tensor, offset, shape, "params", bufferOffset, List.of(strides));
    }

    private static TargetFragment whole(String tensor, long rows, long cols, long bufferOffset) {
        return box(tensor, List.of(0L, 0L), List.of(rows, cols), bufferOffset, cols * 2, 2L);
    }

    private LoaderRegistration direct(
            String group, String worker, long bufferBytes, TargetFragment... fragments) {
        WorkerPlacement w =
                new WorkerPlacement(
                        worker,
                        "r-" + model,
                        "eth0",
                        ConsumeMode.DIRECT,
                        List.of(new ReceiveBuffer("params", "rx-" + worker, bufferBytes)));
        w.setFragments(List.of(fragments));
        return new LoaderRegistration(model, group, "r-" + model, List.of(w));
    }

    private HttpResponse<String> register(String instance, LoaderRegistration registration) {
        return putLoader(instance, registration);
    }

    private HttpResponse<String> plan(String group) {
        return call("POST", "/api/v1/plans", LOADER, new PlanRequest(model, generation, group));
    }

    /** Asserts status and type, and that the problem names instance, worker and tensor. */
    private JsonNode refused(
            HttpResponse<String> response,
            int status,
            String type,
            String instance,
            String worker,
            String tensor) {
        assertProblem(response, status, type);
        JsonNode body = json.readTree(response.body());
        // "instance" is RFC 9457's own member (the request); the rollout instance has its own.
        assertThat(body.path("instanceId").asString()).isEqualTo(instance);
        assertThat(response.body()).containsOnlyOnce("\"instance\"");
        assertThat(body.path("worker").asString()).isEqualTo(worker);
        if (tensor != null) {
            assertThat(body.path("tensor").asString()).isEqualTo(tensor);
        }
        assertThat(body.path("detail").asString()).contains(instance, worker);
        return body;
    }

    /**
     * Registers instance {@code i-<model>} in group {@code g} with one worker holding {@code boxes}
     * in a buffer of {@code bufferBytes}; asserts it is refused (400) naming the tensor.
     */
    private JsonNode refusedAtRegistration(
            String worker, long bufferBytes, String type, String tensor, TargetFragment... boxes) {
        return refused(
                register("i-" + model, direct("g", worker, bufferBytes, boxes)),
                400,
                type,
                "i-" + model,
                worker,
                tensor);
    }

    /** The same registration, accepted; the plan of group {@code g} is refused (409) instead. */
    private JsonNode refusedAtPlan(
            String worker, long bufferBytes, String type, String tensor, TargetFragment... boxes) {
        register("i-" + model, direct("g", worker, bufferBytes, boxes));
        return refused(plan("g"), 409, type, "i-" + model, worker, tensor);
    }

    // ---- registration ------------------------------------------------------------------------

    @Test
    void registrationRefusesBoxesWhoseRanksDiffer() {
        JsonNode body =
                refusedAtRegistration(
                        "w0",
                        4096,
                        "placement-rank-mismatch",
                        "layer.0.weight",
                        box("layer.0.weight", List.of(0L), List.of(32L, 32L), 0, 64L, 2L));
        assertThat(body.path("fragment").asInt()).isZero();
        assertThat(body.path("expected").asString()).isEqualTo("rank 2");
    }

    @Test
    void registrationRefusesMissingNumbers() {
        String body =
                json.writeValueAsString(
                                direct(
                                        "g",
                                        "w0",
                                        4096,
                                        box("layer.0.bias", List.of(0L), List.of(32L), 0, 2L)))
                        .replace("\"shape\":[32]", "\"shape\":[null]");
        assertThat(body).contains("[null]");
        // No schema of the contract is nullable: refused as the body is read, naming where.
        HttpResponse<String> refused = call("PUT", "/api/v1/loaders/i-" + model, LOADER, body);
        assertProblem(refused, 400, "invalid-request");
        assertThat(json.readTree(refused.body()).path("detail").asString())
                .startsWith("workers[0].fragments[0].shape[0] is null");
    }

    @Test
    void registrationRefusesStridesThatOverlapElements() {
        refusedAtRegistration(
                "w0",
                4096,
                "placement-bad-strides",
                "layer.0.weight",
                box("layer.0.weight", List.of(0L, 0L), List.of(32L, 32L), 0, 2L, 2L));
        refusedAtRegistration(
                "w1",
                4096,
                "placement-bad-strides",
                "layer.0.bias",
                box("layer.0.bias", List.of(0L), List.of(32L), 0, 0L));
    }

    @Test
    void registrationRefusesBoxesThatLeaveTheirBuffer() {
        JsonNode body =
                refusedAtRegistration(
                        "w0",
                        2047,
                        "placement-outside-buffer",
                        "layer.0.weight",
                        whole("layer.0.weight", 32, 32, 0));
        assertThat(body.path("expected").asString()).isEqualTo("at most 2047 bytes");
        assertThat(body.path("given").asString()).isEqualTo("bytes 0 to 2048");
        assertThat(body.path("bufferId").asString()).isEqualTo("params");
    }

    @Test
    void registrationRefusesBoxesThatShareBytesOfOneBuffer() {
        JsonNode body =
                refusedAtRegistration(
                        "w0",
                        1 << 20,
                        "placement-overlap",
                        "layer.0.bias",
                        whole("layer.0.weight", 32, 32, 0),
                        box("layer.0.bias", List.of(0L), List.of(32L), 2046, 2L));
        assertThat(body.path("otherTensor").asString()).isEqualTo("layer.0.weight");

        // Column halves interleaved in one [256, 32] buffer share no byte; shifted by 8 columns
        // they do.
        TargetFragment left = box("embed.weight", List.of(0L, 0L), List.of(256L, 16L), 0, 64L, 2L);
        TargetFragment right =
                box("embed.weight", List.of(0L, 16L), List.of(256L, 16L), 32, 64L, 2L);
        TargetFragment shifted =
                box("embed.weight", List.of(0L, 8L), List.of(256L, 16L), 16, 64L, 2L);
        assertThat(register("ok-" + model, direct("g", "w1", 256 * 64, left, right)).statusCode())
                .isEqualTo(200);
        refusedAtRegistration("w2", 256 * 64, "placement-overlap", "embed.weight", left, shifted);
    }

    // ---- against the manifest ------------------------------------------------------------------

    @Test
    void fp32StridesForABf16TensorAreRefusedBeforeAnyPlanExists() {
        String instance = "i-" + model;
        // Registration cannot know the dtype: the box is self-consistent with 4-byte elements.
        assertThat(
                        register(
                                        instance,
                                        direct(
                                                "fp32",
                                                "w0",
                                                1 << 20,
                                                box(
                                                        "layer.0.weight",
                                                        List.of(0L, 0L),
                                                        List.of(32L, 32L),
                                                        0,
                                                        128L,
                                                        4L)))
                                .statusCode())
                .isEqualTo(200);
        JsonNode body =
                refused(
                        plan("fp32"),
                        409,
                        "placement-dtype-mismatch",
                        instance,
                        "w0",
                        "layer.0.weight");
        assertThat(body.path("expected").asString()).isEqualTo("2 bytes");
        assertThat(body.path("given").asString()).isEqualTo("4 bytes");
        assertThat(body.path("dtype").asString()).isEqualTo("BF16");
    }

    @Test
    void tensorsTheManifestDoesNotHaveAreRefused() {
        refusedAtPlan(
                "w0",
                4096,
                "placement-unknown-tensor",
                "layer.9.weight",
                whole("layer.9.weight", 32, 32, 0));
    }

    @Test
    void ranksOtherThanTheTensorsAreRefused() {
        JsonNode body =
                refusedAtPlan(
                        "w0",
                        4096,
                        "placement-tensor-rank-mismatch",
                        "layer.0.bias",
                        box("layer.0.bias", List.of(0L, 0L), List.of(1L, 32L), 0, 64L, 2L));
        assertThat(body.path("expected").asString()).startsWith("rank 1");
    }

    @Test
    void boxesThatLeaveTheTensorAreRefused() {
        JsonNode body =
                refusedAtPlan(
                        "w0",
                        1 << 20,
                        "placement-outside-tensor",
                        "embed.weight",
                        box("embed.weight", List.of(250L, 0L), List.of(16L, 32L), 0, 64L, 2L));
        assertThat(body.path("expected").asString()).isEqualTo("inside [256, 32]");
    }

    @Test
    void aCompatBufferTooSmallForTheImageIsRefused() {
        LoaderRegistration small = compatLoader(model, "g", "r-" + model, 1);
        small.getWorkers().get(0).getBuffers().get(0).setSize(1000L);
        register("i-" + model, small);
        refused(
                plan("g"),
                409,
                "placement-image-too-large",
                "i-" + model,
                "r-" + model + "-w0",
                null);
    }

    @Test
    void oneBadLoaderRefusesTheWholeGroupsPlan() {
        register("good-" + model, compatLoader(model, "g", "r-" + model, 1));
        register("bad-" + model, direct("g", "w9", 4096, whole("layer.9.weight", 32, 32, 0)));
        refused(plan("g"), 409, "placement-unknown-tensor", "bad-" + model, "w9", "layer.9.weight");
    }

    @Test
    void aGoodDirectPlacementStillPlans() {
        TargetFragment left = box("embed.weight", List.of(0L, 0L), List.of(256L, 16L), 0, 64L, 2L);
        TargetFragment right =
                box("embed.weight", List.of(0L, 16L), List.of(256L, 16L), 32, 64L, 2L);
        LoaderRegistration a =
                direct(
                        "g",
                        "a-w0",
                        1 << 20,
                        left,
                        right,
                        whole("layer.0.weight", 32, 32, 256 * 64),
                        box("layer.0.bias", List.of(0L), List.of(32L), 256 * 64 + 2048, 2L));
        assertThat(register("a-" + model, a).statusCode()).isEqualTo(200);
        register("b-" + model, compatLoader(model, "g", "r-" + model, 1));
        PlanSummary summary = ok(plan("g"), PlanSummary.class);
        assertThat(summary.getValid()).isTrue();
        assertThat(summary.getInstances()).containsExactly("a-" + model, "b-" + model);
    }

    // ---- update sessions -----------------------------------------------------------------------

    private String session(String group) {
        return sessionPath(model, generation, group);
    }

    @Test
    void aSessionNeverStartsOnAPlanThatDoesNotExistOrIsNotValid() {
        register("i-" + model, direct("g", "w0", 4096, whole("layer.9.weight", 32, 32, 0)));
        assertProblem(plan("g"), 409, "placement-unknown-tensor");
        UpdateSessionRequest unknown =
                new UpdateSessionRequest(List.of("i-" + model), "0".repeat(64));
        assertProblem(call("PUT", session("g"), LOADER, unknown), 404, "plan-not-found");
        assertProblem(get(session("g"), LOADER), 404, "session-not-found");

        String invalid = "f".repeat(64);
        PlanSummary summary =
                new PlanSummary(
                        invalid,
                        "a".repeat(64),
                        "b".repeat(64),
                        "c".repeat(64),
                        List.of("i-" + model),
                        0L,
                        0L,
                        0,
                        false);
        redis.opsForValue().set(keys.planSummary(invalid), json.writeValueAsString(summary));
        try {
            UpdateSessionRequest bad = new UpdateSessionRequest(List.of("i-" + model), invalid);
            HttpResponse<String> response = call("PUT", session("g"), LOADER, bad);
            assertProblem(response, 409, "plan-invalid");
            assertThat(json.readValue(response.body(), Map.class)).containsEntry("planId", invalid);
            assertProblem(get(session("g"), LOADER), 404, "session-not-found");
        } finally {
            redis.delete(keys.planSummary(invalid));
        }
    }
}
