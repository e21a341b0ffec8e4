package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.common.model.Nic;
import io.weightrelay.api.common.model.Node;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.common.model.StoredFragment;
import io.weightrelay.api.common.model.TensorSpec;
import io.weightrelay.api.common.model.Topology;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.GenerationManifest;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.OpenGenerationRequest;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.RegisterObjectsRequest;
import io.weightrelay.api.control.model.RegisteredObject;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.service.test.ServiceSmokeTestSupport;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.springframework.beans.factory.annotation.Autowired;
import tools.jackson.databind.json.JsonMapper;

/**
 * HTTP helpers and fixtures for tests that run the whole service: one token per role, a small
 * manifest, and shortcuts to open, fill and commit generations.
 */
public abstract class ControlApiClientSupport extends ServiceSmokeTestSupport {

    public static final String TRAINER = "trainer-token-0123456789";
    public static final String LOADER = "loader-token-0123456789";
    public static final String OPERATOR = "operator-token-0123456789";

    /** An owner token valid for any segment (control-api's {@code tokens.owner}). */
    public static final String OWNER = "owner-token-0123456789";

    /** The owner token bound to segment {@link #BOUND_SEGMENT}. */
    public static final String OWNER_BOUND = "owner-bound-token-0123456789";

    public static final String BOUND_SEGMENT = "seg-bound-a";

    /** The loader token bound to instance {@link #BOUND_INSTANCE}. */
    public static final String LOADER_BOUND = "loader-bound-token-0123456789";

    public static final String BOUND_INSTANCE = "inst-bound-a";
    public static final String METRICS = "metrics-token-0123456789";

    /** What control-api presents to segment owners ({@code relay.checkpoints.owner-token}). */
    public static final String OWNER_CALL = "owner-call-token-0123456789";

    @Autowired protected JsonMapper json;

    protected static String newModel() {
        return "m-" + UUID.randomUUID().toString().substring(0, 8);
    }

    // ---- HTTP ---------------------------------------------------------------------------------

    protected HttpResponse<String> call(String method, String path, String token, Object body) {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri(path));
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        if (body == null) {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            String text = body instanceof String s ? s : json.writeValueAsString(body);
            request.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(text));
        }
        return send(request);
    }

    protected HttpResponse<String> get(String path, String token) {
        return call("GET", path, token, null);
    }

    /** The long poll for the generation after {@code after}, waiting up to {@code waitSeconds}. */
    protected HttpResponse<String> nextGeneration(String model, long after, int waitSeconds) {
        return get(
                "/api/v1/models/"
                        + model
                        + "/generations/active/next?after="
                        + after
                        + "&waitSeconds="
                        + waitSeconds,
                LOADER);
    }

    /** {@link #nextGeneration} with a 20 s wait, running while the test goes on. */
    protected CompletableFuture<HttpResponse<String>> pollNextGeneration(String model, long after) {
        return CompletableFuture.supplyAsync(() -> nextGeneration(model, after, 20));
    }

    protected <T> T ok(HttpResponse<String> response, Class<T> type) {
        assertThat(response.statusCode()).as(response.body()).isBetween(200, 201);
        return json.readValue(response.body(), type);
    }

    // ---- fixtures ------------------------------------------------------------------------------

    protected static TensorSpec tensor(String name, long... shape) {
        List<Long> dims = new ArrayList<>();
        for (long d : shape) {
            dims.add(d);
        }
        return new TensorSpec(name, dims, Dtype.FP32, Dtype.BF16);
    }

    /** Three tensors; with 4 KiB fragments the big one splits into several objects. */
    protected static SourceManifest manifest(String model) {
        return manifestOf(
                model,
                tensor("embed.weight", 256, 32),
                tensor("layer.0.weight", 32, 32),
                tensor("layer.0.bias", 32));
    }

    /** A manifest of {@code tensors} (a list the test may add to) cut into 4 KiB fragments. */
    protected static SourceManifest manifestOf(String model, TensorSpec... tensors) {
        SourceManifest m = new SourceManifest(model, new ArrayList<>(List.of(tensors)));
        m.setMaxFragmentBytes(4096L);
        return m;
    }

    protected static Topology trainers(String... names) {
        List<Node> nodes = new ArrayList<>();
        for (String n : names) {
            nodes.add(new Node(n, List.of(new Nic("eth0", 100.0))));
        }
        return new Topology(nodes);
    }

    /** Asks, as the trainer, to open a generation of {@code model}; the answer as it is. */
    protected HttpResponse<String> requestOpen(String model, OpenGenerationRequest request) {
        return call("POST", "/api/v1/models/" + model + "/generations", TRAINER, request);
    }

    /**
     * Asks to open step {@code step} of {@code manifest} trained on t0 and t1; the answer as is.
     */
    protected HttpResponse<String> requestOpen(String model, long step, SourceManifest manifest) {
        return requestOpen(model, new OpenGenerationRequest(step, manifest, trainers("t0", "t1")));
    }

    protected OpenedGeneration open(String model, long step) {
        return ok(requestOpen(model, step, manifest(model)), OpenedGeneration.class);
    }

    protected List<StoredFragment> fragments(String model, long generation) {
        return ok(
                        get(
                                "/api/v1/models/"
                                        + model
                                        + "/generations/"
                                        + generation
                                        + "/manifest",
                                OPERATOR),
                        GenerationManifest.class)
                .getFragments();
    }

    protected HttpResponse<String> register(
            String model, long generation, List<RegisteredObject> objects) {
        return call(
                "POST",
                "/api/v1/models/" + model + "/generations/" + generation + "/objects",
                TRAINER,
                new RegisterObjectsRequest(objects));
    }

    protected static RegisteredObject object(String key, long size) {
        return new RegisteredObject(key, size, "crc32c:0badf00d");
    }

    /** Registers every fragment with its right size; returns the fragments. */
    protected List<StoredFragment> registerAll(String model, long generation) {
        List<StoredFragment> fragments = fragments(model, generation);
        List<RegisteredObject> objects = new ArrayList<>();
        for (StoredFragment f : fragments) {
            objects.add(object(f.getKey(), f.getBytes()));
        }
        assertThat(register(model, generation, objects).statusCode()).isEqualTo(200);
        return fragments;
    }

    protected HttpResponse<String> commit(String model, long generation) {
        return call(
                "POST",
                "/api/v1/models/" + model + "/generations/" + generation + "/commit",
                TRAINER,
                null);
    }

    /** Opens, fills and commits a generation; returns its id. */
    protected long publish(String model, long step) {
        long generation = open(model, step).getGeneration().getGeneration();
        registerAll(model, generation);
        assertThat(commit(model, generation).statusCode()).isEqualTo(200);
        return generation;
    }

    /**
     * Registers every fragment with its right size as stored in {@code segment}; returns the
     * fragments.
     */
    protected List<StoredFragment> registerAllIn(String model, long generation, String segment) {
        List<StoredFragment> fragments = fragments(model, generation);
        List<RegisteredObject> objects = new ArrayList<>();
        for (StoredFragment f : fragments) {
            objects.add(object(f.getKey(), f.getBytes()).segments(List.of(segment)));
        }
        assertThat(register(model, generation, objects).statusCode()).isEqualTo(200);
        return fragments;
    }

    /** Opens, fills with objects stored in {@code segment} and commits a generation. */
    protected long publishIn(String model, long step, String segment) {
        long generation = open(model, step).getGeneration().getGeneration();
        registerAllIn(model, generation, segment);
        assertThat(commit(model, generation).statusCode()).isEqualTo(200);
        return generation;
    }

    /** A loader of compat workers, each with one receive buffer in its own segment. */
    /** An operator's read of {@code path}, which must succeed. */
    protected <T> T read(String path, Class<T> type) {
        return ok(get(path, OPERATOR), type);
    }

    protected static String generationPath(String model, long generation) {
        return "/api/v1/models/" + model + "/generations/" + generation;
    }

    /** Registers a segment owner with {@code token}. */
    protected HttpResponse<String> putSegment(String segment, String token, Object registration) {
        return call("PUT", "/api/v1/segments/" + segment, token, registration);
    }

    /** Resolves the plan of a rollout group's update to a generation, as a loader does. */
    protected PlanSummary resolvePlan(String model, long generation, String group) {
        return ok(
                call("POST", "/api/v1/plans", LOADER, new PlanRequest(model, generation, group)),
                PlanSummary.class);
    }

    /** The phases a loader reports through a whole update, in order. */
    protected static final List<ReportedPhase> EVERY_PHASE =
            List.of(ReportedPhase.PREPARED, ReportedPhase.APPLIED, ReportedPhase.POST_APPLIED);

    /** The update session of a rollout group to a generation. */
    protected static String sessionPath(String model, long generation, String group) {
        return "/api/v1/models/" + model + "/generations/" + generation + "/updates/" + group;
    }

    /**
     * Registers a loader instance (again: a new life, a new epoch), as its own process does; the
     * registration is a {@link LoaderRegistration} or its JSON.
     */
    protected HttpResponse<String> putLoader(String instance, Object registration) {
        return call("PUT", "/api/v1/loaders/" + instance, LOADER, registration);
    }

    /** {@link #putLoader}, which must succeed. */
    protected Loader registerLoader(String instance, LoaderRegistration registration) {
        return ok(putLoader(instance, registration), Loader.class);
    }

    public static LoaderRegistration compatLoader(
            String model, String group, String node, int workers) {
        List<WorkerPlacement> list = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            list.add(
                    new WorkerPlacement(
                            node + "-w" + w,
                            node,
                            "eth0",
                            ConsumeMode.COMPAT,
                            List.of(
                                    new ReceiveBuffer(
                                            "safetensors", "rx-" + node + "-w" + w, 1L << 20))));
        }
        return new LoaderRegistration(model, group, node, list);
    }
}
