package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.common.model.TensorSpec;
import io.weightrelay.api.control.model.GcReport;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.reshard.manifest.GenerationId;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.context.TestPropertySource;

/**
 * control-api keeps each manifest's forms (encoded, gzipped, decoded, the JSON view, the #3187
 * export) in memory for its readers. A Kimi-K2 manifest encodes to tens of MB, and an RL loop that
 * changes its layout, or a cluster serving many models, opens a new manifest again and again: the
 * forms are bounded in bytes ({@code relay.generations.manifest-cache}), and those of a collected
 * generation, and of a manifest no generation uses any more, leave at once.
 */
@TestPropertySource(properties = "relay.generations.manifest-cache=" + ManifestCacheTest.CAP)
class ManifestCacheTest extends ControlApiTestSupport {

    static final long CAP = 96 * 1024;

    @Autowired ManifestStore manifests;

    /** A layout of its own per {@code variant}: 100 small tensors, so its own digest. */
    private static SourceManifest layout(String model, int variant) {
        List<TensorSpec> tensors = new ArrayList<>();
        for (int t = 0; t < 100; t++) {
            tensors.add(tensor("layer." + t + ".v" + variant + ".weight", 16 + variant % 7));
        }
        return manifestOf(model, tensors.toArray(TensorSpec[]::new));
    }

    @Test
    void manyGenerationsOfNewLayoutsLeaveTheCacheBoundedAndCollectedOnesLeaveIt() {
        String model = newModel();
        List<Long> opened = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            long generation =
                    ok(requestOpen(model, i + 1, layout(model, i)), OpenedGeneration.class)
                            .getGeneration()
                            .getGeneration();
            opened.add(generation);
            // Every reader's form, as publishers, loaders and operators ask for them.
            GenerationId id = new GenerationId(model, generation);
            manifests.encodedManifest(id);
            manifests.gzippedManifest(id);
            manifests.manifest(id);
            assertThat(manifests.cachedBytes())
                    .as("bytes cached after %d manifests", i + 1)
                    .isLessThanOrEqualTo(CAP);
        }
        assertThat(manifests.cachedEntries(model)).isPositive();

        for (long generation : opened) {
            assertThat(
                            call(
                                            "POST",
                                            generationPath(model, generation) + "/abort",
                                            TRAINER,
                                            null)
                                    .statusCode())
                    .isEqualTo(200);
        }
        GcReport report =
                ok(call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null), GcReport.class);
        assertThat(report.getCollected()).containsExactlyInAnyOrderElementsOf(opened);
        assertThat(manifests.cachedEntries(model))
                .as("forms of collected generations and their removed manifests")
                .isZero();
    }
}
