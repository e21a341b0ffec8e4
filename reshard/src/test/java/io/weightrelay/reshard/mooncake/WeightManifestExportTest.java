package io.weightrelay.reshard.mooncake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Exports checked by the real {@code WeightManifest.from_json} of the pinned Mooncake wheel. */
class WeightManifestExportTest {

    @Test
    void theRealPackageAcceptsOurExportAndWritesItBackByteForByte() throws Exception {
        SourceManifest qwen =
                Fragmenter.fragment(
                        "qwen2.5-0.5b", ModelCatalog.tensors("qwen2.5-0.5b"), 16L << 20);
        SourceManifest tiny = Fragmenter.fragment("tiny", ModelCatalog.tensors("tiny"), 4096);
        String first =
                WeightManifestExport.json(
                        qwen, new GenerationId("qwen2.5-0.5b", 7), "2026-12-06T09:00:00Z");
        String second =
                WeightManifestExport.json(
                        qwen, new GenerationId("qwen2.5-0.5b", 7), "2026-12-06T09:00:00Z");
        String other =
                WeightManifestExport.json(
                        tiny, new GenerationId("tiny", 3), "2026-12-06T09:01:00Z");
        assertThat(second).isEqualTo(first);

        List<String> verdicts = MooncakePython.run("check_weight_manifest.py", first, other);

        assertThat(verdicts)
                .containsExactly(
                        WeightManifestExport.digest(first) + " canonical",
                        WeightManifestExport.digest(other) + " canonical");
    }

    @Test
    void theDigestIncludesTheGenerationButTheRevisionDoesNot() {
        SourceManifest tiny = Fragmenter.fragment("tiny", ModelCatalog.tensors("tiny"), 4096);
        String g3 = WeightManifestExport.json(tiny, new GenerationId("tiny", 3), "t");
        String g4 = WeightManifestExport.json(tiny, new GenerationId("tiny", 4), "t");
        assertThat(WeightManifestExport.digest(g3)).isNotEqualTo(WeightManifestExport.digest(g4));
        assertThat(g3).contains("\"revision\":\"" + tiny.digest() + "\"");
        assertThat(g4).contains("\"revision\":\"" + tiny.digest() + "\"");
    }

    @Test
    void aScalarTensorIsRefusedNamingTheField() {
        List<TensorSpec> tensors = new ArrayList<>(ModelCatalog.tensors("tiny"));
        tensors.add(new TensorSpec("step", Shape.of(), DType.F32, DType.F32));
        SourceManifest manifest = Fragmenter.fragment("tiny", tensors, 4096);
        assertThatThrownBy(
                        () -> WeightManifestExport.json(manifest, new GenerationId("tiny", 1), "t"))
                .isInstanceOfSatisfying(
                        Inexpressible.class,
                        e -> {
                            assertThat(e.field())
                                    .isEqualTo(
                                            "tensors[" + (tensors.size() - 1) + "].global_shape");
                            assertThat(e.value()).isEqualTo("[]");
                            assertThat(e.getMessage()).contains("step");
                        });
    }

    /** Runs a checker of src/test/python in the test venv, one line of output per input. */
    static final class MooncakePython {
        static List<String> run(String script, String... documents) throws Exception {
            Path dir = Files.createDirectories(Path.of("target", "mooncake-3187"));
            List<String> command = new ArrayList<>();
            String venv =
                    System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv");
            command.add(Path.of(venv, "bin", "python").toString());
            command.add(Path.of("src", "test", "python", script).toString());
            for (int i = 0; i < documents.length; i++) {
                Path file = dir.resolve("doc-" + i + ".json");
                Files.writeString(file, documents[i], StandardCharsets.UTF_8);
                command.add(file.toString());
            }
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output =
                    new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(process.waitFor())
                    .as(
                            "%s in %s (create the venv with python/ci-venv.sh): %s",
                            script, venv, output)
                    .isZero();
            List<String> verdicts = new ArrayList<>();
            for (String line : output.strip().split("\n")) {
                verdicts.add(line.substring(line.indexOf(' ') + 1));
            }
            return verdicts;
        }
    }
}
