package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.OpenGenerationRequest;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.reshard.codec.Digests;
import io.weightrelay.reshard.manifest.GenerationId;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code GET .../manifest/mooncake-3187}: a committed generation read twice is the same bytes,
 * Mooncake's real {@code WeightManifest.from_json} (the pinned wheel in the test venv) accepts it
 * and writes it back byte for byte, and its {@code manifest_digest} is the ETag.
 */
class MooncakeManifestExportTest extends ControlApiTestSupport {

    private HttpResponse<String> export(GenerationId generation) {
        return get(
                generationPath(generation.model(), generation.generation())
                        + "/manifest/mooncake-3187",
                LOADER);
    }

    @Test
    void aCommittedGenerationIsAValidStableMooncake3187Manifest() throws Exception {
        String model = newModel();
        long generation = publish(model, 1);

        HttpResponse<String> first = export(new GenerationId(model, generation));
        HttpResponse<String> second = export(new GenerationId(model, generation));

        assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
        assertThat(second.body()).isEqualTo(first.body());
        String digest = Digests.sha256Hex(first.body().getBytes(StandardCharsets.UTF_8));
        assertThat(first.headers().firstValue("ETag")).contains("\"" + digest + "\"");
        assertThat(realFromJson(first.body())).isEqualTo(digest + " canonical");
        assertThat(first.body())
                .contains("\"weight_generation\":" + generation)
                .contains("\"object_key\":\"" + model + "/" + generation + "/payload/");
    }

    @Test
    void aGenerationNeverCommittedHasNoMooncakeManifest() {
        String model = newModel();
        long generation = open(model, 1).getGeneration().getGeneration();

        HttpResponse<String> refused = export(new GenerationId(model, generation));

        assertThat(refused.statusCode()).isEqualTo(409);
        assertThat(refused.body())
                .contains("https://weightrelay.io/problems/generation-not-committed");
    }

    @Test
    void aScalarTensorIsRefusedNamingTheMooncakeField() {
        String model = newModel();
        var manifest = manifestOf(model, tensor("layer.0.weight", 32, 32), tensor("step"));
        long generation =
                ok(
                                requestOpen(
                                        model,
                                        new OpenGenerationRequest(1L, manifest, trainers("t0"))),
                                io.weightrelay.api.control.model.OpenedGeneration.class)
                        .getGeneration()
                        .getGeneration();
        registerAll(model, generation);
        assertThat(commit(model, generation).statusCode()).isEqualTo(200);

        HttpResponse<String> refused = export(new GenerationId(model, generation));

        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(422);
        assertThat(refused.headers().firstValue("Content-Type"))
                .hasValueSatisfying(
                        type -> assertThat(type).startsWith("application/problem+json"));
        assertThat(refused.body())
                .contains("https://weightrelay.io/problems/mooncake-3187-inexpressible")
                .contains("\"field\":\"tensors[1].global_shape\"")
                .contains("step");
    }

    /** The verdict of the real package's {@code WeightManifest.from_json} on one document. */
    private static String realFromJson(String document) throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "mooncake-3187"));
        Path file = dir.resolve("export.json");
        Files.writeString(file, document, StandardCharsets.UTF_8);
        String venv = System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv");
        List<String> command = new ArrayList<>();
        command.add(Path.of(venv, "bin", "python").toString());
        command.add(
                Path.of("..", "reshard", "src", "test", "python", "check_weight_manifest.py")
                        .toString());
        command.add(file.toString());
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor())
                .as(
                        "the real WeightManifest.from_json in %s (python/ci-venv.sh makes it): %s",
                        venv, output)
                .isZero();
        String line = output.strip();
        return line.substring(line.indexOf(' ') + 1);
    }
}
