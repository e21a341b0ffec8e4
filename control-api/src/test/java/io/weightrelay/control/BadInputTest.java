package io.weightrelay.control;

import static org.junit.jupiter.params.provider.Arguments.arguments;

import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every operation refuses bad input with the right status and a stable problem type. {@code {M}} is
 * a model with generation 1 committed and generation 2 open.
 */
class BadInputTest extends ControlApiTestSupport {

    private static final String MANIFEST =
            "{\"model\":\"{M}\",\"maxFragmentBytes\":4096,\"tensors\":[%s]}";
    private static final String TENSOR =
            "{\"name\":\"%s\",\"shape\":[%s],\"trainerDtype\":\"fp32\",\"rolloutDtype\":\"bf16\"}";
    private static final String TOPOLOGY =
            "{\"nodes\":[{\"name\":\"t0\",\"nics\":[{\"name\":\"eth0\",\"gbps\":100}]}]}";

    private static String model;

    @BeforeEach
    void publishOnce() {
        if (model == null) {
            model = newModel();
            publish(model, 1);
            open(model, 2);
        }
    }

    static String open(String manifest, String topology) {
        return "{\"trainerStep\":99,\"manifest\":"
                + manifest
                + ",\"trainerTopology\":"
                + topology
                + "}";
    }

    static String manifestOf(String... tensors) {
        return MANIFEST.formatted(String.join(",", tensors));
    }

    static String manyTensors(int n) {
        String[] tensors = new String[n];
        for (int i = 0; i < n; i++) {
            tensors[i] = TENSOR.formatted("t" + i, "1");
        }
        return manifestOf(tensors);
    }

    static Stream<Arguments> cases() {
        String gens = "/api/v1/models/{M}/generations";
        String ok = TENSOR.formatted("w", "4,4");
        String obj = "{\"objects\":[{\"key\":\"{M}/2/w@0\",\"size\":%s,\"checksum\":\"%s\"}]}";
        return Stream.of(
                // generations: open
                arguments("POST", gens, TRAINER, "{\"trainerStep\":", 400, "invalid-request"),
                arguments("POST", gens, TRAINER, "{\"trainerStep\":1}", 400, "invalid-request"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(
                                manifestOf(ok).replace("\"model\":\"{M}\"", "\"model\":\"other\""),
                                TOPOLOGY),
                        400,
                        "model-mismatch"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manifestOf(TENSOR.formatted("w", "-4,4")), TOPOLOGY),
                        400,
                        "invalid-request"),
                // Tensors are checked by hand, not by cascading bean validation: the same answers.
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manifestOf(ok, TENSOR.formatted("", "4")), TOPOLOGY),
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manifestOf(ok, TENSOR.formatted("w", "1,2,3,4,5,6,7,8,9")), TOPOLOGY),
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(
                                manifestOf(
                                        ok,
                                        "{\"name\":\"w\",\"shape\":[4],\"trainerDtype\":\"fp32\"}"),
                                TOPOLOGY),
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manifestOf(ok, ok), TOPOLOGY),
                        400,
                        "invalid-manifest"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manifestOf(ok).replace("4096", "16"), TOPOLOGY),
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manifestOf(ok).replace("bf16", "fp4"), TOPOLOGY),
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manyTensors(1001), TOPOLOGY),
                        413,
                        "manifest-too-large"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manyTensors(16000), TOPOLOGY),
                        413,
                        "payload-too-large"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(manifestOf(ok), "{\"nodes\":[]}"),
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens,
                        TRAINER,
                        open(
                                manifestOf(ok),
                                TOPOLOGY.replace(
                                        "]}]}",
                                        "]},{\"name\":\"t0\",\"nics\":[{\"name\":\"e\",\"gbps\":1}]}]}")),
                        400,
                        "invalid-topology"),
                arguments(
                        "POST",
                        "/api/v1/models/bad%20model/generations",
                        TRAINER,
                        open(manifestOf(ok), TOPOLOGY),
                        400,
                        "invalid-request"),
                arguments("POST", gens, LOADER, open(manifestOf(ok), TOPOLOGY), 403, "forbidden"),
                arguments("POST", gens, null, open(manifestOf(ok), TOPOLOGY), 401, "unauthorized"),
                // generations: objects, commit, abort
                arguments(
                        "POST",
                        gens + "/2/objects",
                        TRAINER,
                        obj.formatted("-1", "crc32c:0badf00d"),
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens + "/2/objects",
                        TRAINER,
                        obj.formatted("4", "not a checksum"),
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens + "/2/objects",
                        TRAINER,
                        "{\"objects\":[]}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens + "/2/objects",
                        TRAINER,
                        obj.formatted("4", "crc32c:0badf00d").replace("{M}/2/", "{M}/1/"),
                        400,
                        "unknown-object"),
                arguments(
                        "POST",
                        gens + "/2/objects",
                        TRAINER,
                        obj.formatted("4", "crc32c:0badf00d"),
                        400,
                        "unknown-object"),
                arguments(
                        "POST",
                        gens + "/1/objects",
                        TRAINER,
                        obj.formatted("4", "crc32c:0badf00d").replace("{M}/2/", "{M}/1/"),
                        409,
                        "generation-not-open"),
                arguments(
                        "POST",
                        gens + "/9/objects",
                        TRAINER,
                        obj.formatted("4", "crc32c:0badf00d").replace("{M}/2/", "{M}/9/"),
                        404,
                        "generation-not-found"),
                arguments(
                        "POST",
                        gens + "/2/objects",
                        LOADER,
                        obj.formatted("4", "crc32c:0badf00d"),
                        403,
                        "forbidden"),
                arguments("POST", gens + "/0/commit", TRAINER, null, 400, "invalid-request"),
                arguments("POST", gens + "/9/commit", TRAINER, null, 404, "generation-not-found"),
                arguments("POST", gens + "/2/commit", OPERATOR, null, 403, "forbidden"),
                arguments("POST", gens + "/9/abort", TRAINER, null, 404, "generation-not-found"),
                arguments(
                        "POST",
                        gens + "/2/abort",
                        TRAINER,
                        "{\"reason\":\"" + "x".repeat(2001) + "\"}",
                        400,
                        "invalid-request"),
                arguments("POST", gens + "/2/abort", LOADER, null, 403, "forbidden"),
                // generations: reads
                arguments(
                        "GET",
                        "/api/v1/models/nobody/generations",
                        OPERATOR,
                        null,
                        404,
                        "model-not-found"),
                arguments(
                        "GET",
                        "/api/v1/models/nobody/generations/active",
                        LOADER,
                        null,
                        404,
                        "model-not-found"),
                arguments(
                        "GET",
                        "/api/v1/models/nobody/generations/1",
                        OPERATOR,
                        null,
                        404,
                        "generation-not-found"),
                arguments(
                        "GET",
                        "/api/v1/models/nobody/generations/1/manifest",
                        OPERATOR,
                        null,
                        404,
                        "generation-not-found"),
                arguments("GET", gens + "?limit=0", OPERATOR, null, 400, "invalid-request"),
                arguments("GET", gens + "?state=SLEEPING", OPERATOR, null, 400, "invalid-request"),
                arguments(
                        "GET",
                        gens + "/active/next?after=-1",
                        LOADER,
                        null,
                        400,
                        "invalid-request"),
                arguments(
                        "GET",
                        gens + "/active/next?after=1&waitSeconds=301",
                        LOADER,
                        null,
                        400,
                        "invalid-request"),
                arguments("GET", gens + "/abc", OPERATOR, null, 400, "invalid-request"),
                arguments("GET", gens, null, null, 401, "unauthorized"),
                // leases and GC
                arguments(
                        "POST",
                        gens + "/1/leases",
                        LOADER,
                        "{\"holder\":\"l\",\"ttlSeconds\":0}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens + "/1/leases",
                        LOADER,
                        "{\"holder\":\"a b\",\"ttlSeconds\":5}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens + "/9/leases",
                        LOADER,
                        "{\"holder\":\"l\",\"ttlSeconds\":5}",
                        404,
                        "generation-not-found"),
                arguments(
                        "POST",
                        gens + "/1/leases",
                        TRAINER,
                        "{\"holder\":\"l\",\"ttlSeconds\":5}",
                        403,
                        "forbidden"),
                arguments(
                        "DELETE", gens + "/9/leases/l", LOADER, null, 404, "generation-not-found"),
                arguments(
                        "POST", "/api/v1/models/nobody/gc", OPERATOR, null, 404, "model-not-found"),
                arguments("POST", "/api/v1/models/{M}/gc", TRAINER, null, 403, "forbidden"),
                // assignments
                arguments(
                        "POST",
                        "/api/v1/assignments",
                        TRAINER,
                        "{\"manifest\":{}}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        "/api/v1/assignments",
                        TRAINER,
                        "{\"manifest\":" + manifestOf(ok) + ",\"trainerTopology\":{\"nodes\":[]}}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        "/api/v1/assignments",
                        LOADER,
                        "{\"manifest\":"
                                + manifestOf(ok)
                                + ",\"trainerTopology\":"
                                + TOPOLOGY
                                + "}",
                        403,
                        "forbidden"),
                // registry
                arguments(
                        "PUT",
                        "/api/v1/segments/s1",
                        TRAINER,
                        "{\"node\":\"n\",\"endpoint\":\"127.0.0.1:1\",\"size\":-5}",
                        400,
                        "invalid-request"),
                arguments(
                        "PUT",
                        "/api/v1/segments/s1",
                        TRAINER,
                        "{\"node\":\"n\",\"endpoint\":\"no port\",\"size\":5}",
                        400,
                        "invalid-request"),
                arguments(
                        "PUT",
                        "/api/v1/segments/bad%20name",
                        TRAINER,
                        "{\"node\":\"n\",\"endpoint\":\"127.0.0.1:1\",\"size\":5}",
                        400,
                        "invalid-request"),
                arguments(
                        "PUT",
                        "/api/v1/segments/s1",
                        LOADER,
                        "{\"node\":\"n\",\"endpoint\":\"127.0.0.1:1\",\"size\":5}",
                        403,
                        "forbidden"),
                arguments(
                        "GET", "/api/v1/segments/nobody", OPERATOR, null, 404, "segment-not-found"),
                arguments(
                        "PUT",
                        "/api/v1/loaders/l1",
                        LOADER,
                        "{\"model\":\"{M}\",\"group\":\"g\",\"node\":\"n\",\"workers\":[]}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        "/api/v1/loaders/nobody/heartbeat",
                        LOADER,
                        null,
                        404,
                        "loader-not-found"),
                arguments(
                        "GET",
                        "/api/v1/loaders?model=bad%20model",
                        OPERATOR,
                        null,
                        400,
                        "invalid-request"),
                // plans
                arguments(
                        "POST",
                        "/api/v1/plans",
                        LOADER,
                        "{\"model\":\"{M}\",\"generation\":0,\"group\":\"g\"}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        "/api/v1/plans",
                        LOADER,
                        "{\"model\":\"nobody\",\"generation\":1,\"group\":\"g\"}",
                        404,
                        "generation-not-found"),
                arguments(
                        "POST",
                        "/api/v1/plans",
                        LOADER,
                        "{\"model\":\"{M}\",\"generation\":1,\"group\":\"g\"}",
                        409,
                        "no-live-loaders"),
                arguments(
                        "POST",
                        "/api/v1/plans",
                        TRAINER,
                        "{\"model\":\"{M}\",\"generation\":1,\"group\":\"g\"}",
                        403,
                        "forbidden"),
                arguments(
                        "GET", "/api/v1/plans/not-a-digest", LOADER, null, 400, "invalid-request"),
                arguments(
                        "GET",
                        "/api/v1/plans/" + "a".repeat(64) + "/encoded",
                        LOADER,
                        null,
                        404,
                        "plan-not-found"),
                // updates
                arguments(
                        "PUT",
                        gens + "/1/updates/g",
                        LOADER,
                        "{\"instances\":[]}",
                        400,
                        "invalid-request"),
                arguments(
                        "PUT",
                        gens + "/1/updates/g",
                        LOADER,
                        "{\"instances\":[\"a\"],\"phaseTimeoutSeconds\":0}",
                        400,
                        "invalid-request"),
                arguments(
                        "PUT",
                        gens + "/1/updates/g",
                        LOADER,
                        "{\"instances\":[\"a\",\"a\"]}",
                        400,
                        "invalid-request"),
                arguments(
                        "PUT",
                        gens + "/9/updates/g",
                        LOADER,
                        "{\"instances\":[\"a\"]}",
                        404,
                        "generation-not-found"),
                arguments(
                        "PUT",
                        gens + "/2/updates/g",
                        LOADER,
                        "{\"instances\":[\"a\"]}",
                        409,
                        "generation-not-committed"),
                arguments(
                        "PUT",
                        gens + "/1/updates/g",
                        TRAINER,
                        "{\"instances\":[\"a\"]}",
                        403,
                        "forbidden"),
                arguments(
                        "POST",
                        gens + "/1/updates/none/reports",
                        LOADER,
                        "{\"instance\":\"a\",\"phase\":\"PREPARED\",\"bytesRead\":-1}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens + "/1/updates/none/reports",
                        LOADER,
                        "{\"instance\":\"a\",\"phase\":\"DANCING\"}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens + "/1/updates/none/reports",
                        LOADER,
                        "{\"instance\":\"a\",\"phase\":\"PREPARED\"}",
                        404,
                        "session-not-found"),
                arguments(
                        "GET", gens + "/1/updates/none", OPERATOR, null, 404, "session-not-found"),
                arguments(
                        "GET",
                        gens + "/1/updates/none/barriers/sideways",
                        LOADER,
                        null,
                        400,
                        "invalid-request"),
                // checkpoints
                arguments(
                        "POST",
                        gens + "/1/checkpoints",
                        OPERATOR,
                        "{\"directory\":\"\"}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        gens + "/9/checkpoints",
                        OPERATOR,
                        "{\"directory\":\"/tmp/x\"}",
                        404,
                        "generation-not-found"),
                arguments(
                        "POST",
                        gens + "/2/checkpoints",
                        OPERATOR,
                        "{\"directory\":\"/tmp/x\"}",
                        409,
                        "generation-not-committed"),
                arguments(
                        "POST",
                        gens + "/1/checkpoints",
                        LOADER,
                        "{\"directory\":\"/tmp/x\"}",
                        403,
                        "forbidden"),
                arguments(
                        "POST",
                        "/api/v1/models/{M}/checkpoints/restore",
                        OPERATOR,
                        "{\"directory\":\"/tmp/x\",\"generation\":0}",
                        400,
                        "invalid-request"),
                arguments(
                        "POST",
                        "/api/v1/models/{M}/checkpoints/restore",
                        TRAINER,
                        "{\"directory\":\"/tmp/x\",\"generation\":1}",
                        403,
                        "forbidden"));
    }

    @ParameterizedTest(name = "{0} {1} as {2} -> {4} {5}")
    @MethodSource("cases")
    void refused(String method, String path, String token, String body, int status, String type) {
        String p = path.replace("{M}", model);
        String b = body == null ? null : body.replace("{M}", model);
        assertProblem(call(method, p, token, b), status, type);
    }
}
