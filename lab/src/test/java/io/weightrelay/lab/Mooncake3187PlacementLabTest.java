package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.client.RegistryApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.MooncakeFragmentBinding;
import io.weightrelay.api.control.client.model.MooncakePlacementImport;
import io.weightrelay.api.control.client.model.PlacementTemplate;
import io.weightrelay.lab.cluster.LabCatalog.LoaderSlot;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.reshard.placement.Mode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Placements given as Mooncake #3187 JSON, written by the real package of the test venv ({@code
 * src/test/python/mooncake_3187_placement.py}), serve a lab in parameter-direct mode: each rank is
 * imported through control-api's {@code POST /api/v1/placements/mooncake-3187}, the template it
 * stored is what the rank's worker registers (control-api's record of the worker names the imported
 * digest), and an update delivers every byte of each rank's #3187 fragments, checked against the
 * trainer's bytes, the store read exactly once per byte. qwen2.5-0.5b at TP 2 and TP 8 with its key
 * and value heads split (two instances of one lab, updated together), and the tiny model's routed
 * experts whole on the ranks of EP 4.
 */
class Mooncake3187PlacementLabTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @RegisterExtension final RunningLabs labs = new RunningLabs();

    @Test
    void qwenAtTp2AndTp8WithKvHeadsSplitUpdatesEveryByteOfIts3187Placements() throws Exception {
        // Two instances of eight ranks, one rollout node each; the first is registered again with
        // the two ranks of TP 2, the second with the eight of TP 8.
        LabCluster lab =
                labs.add(LabCluster.start(LabCluster.Spec.of("qwen2.5-0.5b", 2, 8, Mode.DIRECT)));
        List<String> placements = List.of(placement(lab, 2, 1), placement(lab, 8, 1));
        // Two KV heads of 64 rows: half each at TP 2, a quarter head (16 rows) each at TP 8.
        assertThat(rowsOf(placements.get(0), "model.layers.0.self_attn.k_proj.weight"))
                .containsExactly(64L, 64L);
        assertThat(rowsOf(placements.get(1), "model.layers.0.self_attn.v_proj.weight"))
                .hasSize(8)
                .containsOnly(16L);
        updatedAndVerified(lab, placements);
    }

    @Test
    void tinyAtEp4WithWholeExpertsUpdatesEveryByteOfIts3187Placement() throws Exception {
        LabCluster.Spec spec = LabCluster.Spec.of("tiny", 1, 4, Mode.DIRECT);
        // One rollout node, so the instance's four ranks have one loader.
        spec =
                new LabCluster.Spec(
                        spec.model(),
                        spec.instances(),
                        spec.tp(),
                        spec.mode(),
                        spec.seed(),
                        spec.trainerNodes(),
                        1,
                        spec.site(),
                        spec.serving());
        LabCluster lab = labs.add(LabCluster.start(spec));
        String placement = placement(lab, 1, 4);
        JsonNode document = JSON.readTree(placement);
        for (JsonNode tensor : document.path("tensors")) {
            if (!tensor.path("expert_id").isNull()) {
                assertThat(tensor.path("parallel_axes").get(0).path("semantics").asString())
                        .as("routed expert %s", tensor.path("tensor_id").asString())
                        .isEqualTo("ownership");
            }
        }
        updatedAndVerified(lab, List.of(placement));
    }

    /**
     * Registers engine {@code i} of {@code lab} with every rank of {@code placements[i]} imported
     * as #3187, then publishes, updates every engine together and checks every byte they hold.
     */
    private static void updatedAndVerified(LabCluster lab, List<String> placements)
            throws Exception {
        List<LoaderSlot> slots = lab.loaderSlots();
        assertThat(slots).as("one loader per instance").hasSize(placements.size());
        long placed = 0;
        for (int i = 0; i < placements.size(); i++) {
            placed += register(lab, slots.get(i), lab.engines().get(i), placements.get(i));
        }
        long started = System.nanoTime();
        long generation = lab.publish(0);
        LabUpdate update = lab.updateAll().requireUpdated();
        long verified = lab.verifyAll(generation);
        System.out.printf(
                "%s: #3187 placements %s bytes, received %d, verified %d, store read %d of %d"
                        + " (publish, update and verify %.1f s)%n",
                lab.spec().model(),
                placed,
                update.bytesReceived(),
                verified,
                update.storeBytesRead(),
                lab.manifest().totalBytes(),
                (System.nanoTime() - started) / 1e9);
        assertThat(verified)
                .as("every byte of every #3187 fragment checked against the trainer's")
                .isEqualTo(placed);
        Delivery.exactAndSinglePull(
                update.bytesReceived(),
                placed,
                update.storeBytesRead(),
                lab.manifest().totalBytes());
        exportedAsTheReal3187Manifest(lab, generation);
    }

    /**
     * The lab's generation, read twice as Mooncake's #3187 {@code WeightManifest}: the same bytes
     * both times, the ETag their SHA-256, and the real {@code WeightManifest.from_json} (the pinned
     * wheel in the test venv) accepts them, writes them back byte for byte and computes the same
     * digest.
     */
    private static void exportedAsTheReal3187Manifest(LabCluster lab, long generation)
            throws Exception {
        java.net.URI uri =
                java.net.URI.create(
                        lab.controlUrl()
                                + "/api/v1/models/"
                                + lab.spec().model()
                                + "/generations/"
                                + generation
                                + "/manifest/mooncake-3187");
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        List<java.net.http.HttpResponse<String>> exports = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            exports.add(
                    http.send(
                            java.net.http.HttpRequest.newBuilder(uri)
                                    .header("Authorization", "Bearer " + lab.operatorToken())
                                    .GET()
                                    .build(),
                            java.net.http.HttpResponse.BodyHandlers.ofString()));
        }
        String body = exports.get(0).body();
        assertThat(exports.get(0).statusCode()).as(body).isEqualTo(200);
        assertThat(exports.get(1).body()).as("a second export").isEqualTo(body);
        String digest =
                io.weightrelay.reshard.codec.Digests.sha256Hex(
                        body.getBytes(StandardCharsets.UTF_8));
        assertThat(exports.get(0).headers().firstValue("ETag")).contains("\"" + digest + "\"");
        Path dir = Files.createDirectories(Path.of("target", "mooncake-3187"));
        Path file = dir.resolve(lab.spec().model() + "-" + generation + ".json");
        Files.writeString(file, body, StandardCharsets.UTF_8);
        String said =
                venvPython(
                        "the real WeightManifest.from_json",
                        Path.of("..", "reshard", "src", "test", "python")
                                .resolve("check_weight_manifest.py")
                                .toString(),
                        file.toString());
        assertThat(said.strip()).isEqualTo(file + " " + digest + " canonical");
        System.out.printf(
                "%s: generation %d exported as #3187 (%d bytes, digest %s), accepted by the real"
                        + " from_json%n",
                lab.spec().model(), generation, body.length(), digest);
    }

    /**
     * Imports every rank of {@code placement} for the engine of {@code slot}, each rank's fragments
     * packed in one buffer, and registers the engine's workers with the templates control-api
     * stored (decoded from {@code GET /api/v1/placements/{digest}}); the workers keep the ids,
     * nodes, NICs and segments the lab gave them. Returns the bytes the ranks hold.
     */
    private static long register(
            LabCluster lab, LoaderSlot slot, RolloutEngine engine, String placement)
            throws Exception {
        Endpoint loader = Endpoint.of(lab.controlUrl(), lab.loaderToken(slot.id()));
        ApiClient client = RelayClients.of(loader).control();
        RegistryApi registry = new RegistryApi(client);

        List<WorkerPlacement> lab0 =
                RolloutEngine.workers(lab.placement(), slot.rolloutInstance(), lab.manifest());
        JsonNode parts = JSON.readTree(placement).path("parts");
        assertThat(lab0.size()).isGreaterThanOrEqualTo(parts.size());
        List<WorkerPlacement> workers = new ArrayList<>();
        Map<String, String> digests = new LinkedHashMap<>();
        long placed = 0;
        for (int r = 0; r < parts.size(); r++) {
            JsonNode part = parts.get(r);
            String participant = part.path("participant_id").asString();
            List<MooncakeFragmentBinding> bindings = new ArrayList<>();
            long offset = 0;
            for (JsonNode f : part.path("fragments")) {
                bindings.add(
                        new MooncakeFragmentBinding()
                                .placementFragmentId(f.path("placement_fragment_id").asString())
                                .bufferId("params")
                                .bufferOffset(offset));
                offset += f.path("nbytes").asLong();
            }
            PlacementTemplate stored =
                    registry.importMooncakePlacement(
                            new MooncakePlacementImport()
                                    .placement(placement)
                                    .participantId(participant)
                                    .bindings(bindings));
            assertThat(stored.getFragments()).isEqualTo(part.path("fragments").size());
            byte[] encoded =
                    client.getRestClient()
                            .get()
                            .uri(
                                    client.getBasePath() + "/api/v1/placements/{digest}",
                                    stored.getDigest())
                            .retrieve()
                            .body(byte[].class);
            FragmentTemplate template = FragmentTemplate.decode(encoded);
            assertThat(template.digest()).isEqualTo(stored.getDigest());
            // The worker holds exactly the boxes of its #3187 part, in the part's order.
            List<String> boxes = new ArrayList<>();
            for (JsonNode f : part.path("fragments")) {
                boxes.add(
                        f.path("tensor_id").asString()
                                + f.path("global_offset")
                                + f.path("local_shape"));
            }
            assertThat(template.entries())
                    .extracting(
                            e ->
                                    e.tensor()
                                            + JSON.writeValueAsString(e.offset())
                                            + JSON.writeValueAsString(e.shape()))
                    .containsExactlyElementsOf(boxes);

            WorkerPlacement original = lab0.get(r);
            WorkerPlacement w =
                    new WorkerPlacement()
                            .workerId(original.getWorkerId())
                            .rank(r)
                            .node(original.getNode())
                            .nic(original.getNic())
                            .mode(original.getMode())
                            .addBuffersItem(
                                    new ReceiveBuffer()
                                            .bufferId("params")
                                            .segment(original.getBuffers().get(0).getSegment())
                                            .size(Math.max(1, offset)));
            for (FragmentTemplate.Entry e : template.entries()) {
                w.addFragmentsItem(
                        new TargetFragment()
                                .tensor(e.tensor())
                                .offset(list(e.offset()))
                                .shape(list(e.shape()))
                                .bufferId(e.buffer())
                                .bufferOffset(e.bufferOffset())
                                .strides(list(e.strides())));
            }
            workers.add(w);
            digests.put(w.getWorkerId(), stored.getDigest());
            placed += offset;
        }
        engine.register(lab.spec().model(), "lab", slot.node(), slot.span(), workers);

        // control-api's record of each worker names the template imported from #3187.
        Map<String, String> named = new LinkedHashMap<>();
        for (var w : lab.loader(slot.id()).getWorkers()) {
            named.put(w.getWorkerId(), w.getPlacement());
        }
        assertThat(named).isEqualTo(digests);
        return placed;
    }

    /** The rows of each placement fragment of {@code tensor}, rank by rank. */
    private static List<Long> rowsOf(String placement, String tensor) {
        List<Long> rows = new ArrayList<>();
        for (JsonNode part : JSON.readTree(placement).path("parts")) {
            for (JsonNode f : part.path("fragments")) {
                if (f.path("tensor_id").asString().equals(tensor)) {
                    rows.add(f.path("local_shape").get(0).asLong());
                }
            }
        }
        return rows;
    }

    private static List<Long> list(long[] values) {
        return Arrays.stream(values).boxed().toList();
    }

    /**
     * Every rank of {@code model} of {@code lab} at {@code tp} and {@code ep} as the canonical JSON
     * of #3187's {@code weight_placement_to_json}, built by the real package in the test venv.
     */
    private static String placement(LabCluster lab, int tp, int ep) throws Exception {
        Map<String, TensorSpec> published = new LinkedHashMap<>();
        lab.manifest().tensors().forEach(t -> published.put(t.name(), t));
        List<Map<String, Object>> tensors = new ArrayList<>();
        for (TensorLayout t : ModelCatalog.layout(lab.spec().model())) {
            TensorSpec spec = published.get(t.spec().name());
            Map<String, Object> tensor = new LinkedHashMap<>();
            tensor.put("name", spec.name());
            tensor.put("shape", spec.shape().dims());
            tensor.put("dtype", spec.rolloutDtype().name());
            tensor.put("itemsize", spec.rolloutDtype().bytes());
            tensor.put("split", t.split().name());
            tensor.put("expert", t.expert());
            tensors.add(tensor);
        }
        Path dir = Files.createDirectories(Path.of("target", "mooncake-3187"));
        String name = lab.spec().model() + "-tp" + tp + "-ep" + ep;
        Path in = dir.resolve(name + ".model.json");
        Path out = dir.resolve(name + ".json");
        JSON.writeValue(
                in.toFile(),
                Map.of("model", lab.spec().model(), "tp", tp, "ep", ep, "tensors", tensors));
        venvPython(
                "the real #3187 package (python/ci-venv.sh makes it)",
                Path.of("src", "test", "python", "mooncake_3187_placement.py").toString(),
                in.toString(),
                out.toString());
        return Files.readString(out, StandardCharsets.UTF_8);
    }

    /**
     * Runs {@code args} with the Python of the venv that holds the pinned packages ({@code
     * WEIGHT_RELAY_VENV}); {@code what} it runs must exit 0. Returns what it said.
     */
    private static String venvPython(String what, String... args) throws Exception {
        String venv = System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv");
        List<String> command = new ArrayList<>();
        command.add(Path.of(venv, "bin", "python").toString());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String said = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor()).as("%s in %s: %s", what, venv, said).isZero();
        return said;
    }
}
