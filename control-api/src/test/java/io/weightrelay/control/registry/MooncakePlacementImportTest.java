package io.weightrelay.control.registry;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.MooncakeFragmentBinding;
import io.weightrelay.api.control.model.MooncakePlacementImport;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.control.ControlApiTestSupport;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Ranks registered as Mooncake #3187 placements, built by the real package of the test venv ({@code
 * src/test/python/mooncake_tp_placement.py}): stored as fragment templates, named by workers whose
 * registration says what #3187 does not (mode, node, NIC, buffers), and planned like any other
 * placement; what our placements cannot take is refused naming the #3187 field.
 */
class MooncakePlacementImportTest extends ControlApiTestSupport {

    private static final long RANK_BYTES = 8192 + 1024 + 64;

    private final String buffer = "params-" + newModel();

    private HttpResponse<String> importRank(
            String placement, String participant, List<MooncakeFragmentBinding> bindings) {
        return call(
                "POST",
                "/api/v1/placements/mooncake-3187",
                LOADER,
                new MooncakePlacementImport(placement, participant, bindings));
    }

    /** Every fragment of the participant's part, packed in the test's buffer in part order. */
    private List<MooncakeFragmentBinding> packed(String placement, String participant) {
        List<MooncakeFragmentBinding> bindings = new ArrayList<>();
        long offset = 0;
        for (JsonNode part : json.readTree(placement).path("parts")) {
            if (!part.path("participant_id").asString().equals(participant)) {
                continue;
            }
            for (JsonNode f : part.path("fragments")) {
                bindings.add(
                        new MooncakeFragmentBinding(
                                f.path("placement_fragment_id").asString(), buffer, offset));
                offset += f.path("nbytes").asLong();
            }
        }
        return bindings;
    }

    @Test
    void tensorParallelRanksGivenAs3187PlacementsArePlannedLikeAnyOther() throws Exception {
        String model = newModel();
        long generation = publish(model, 1);
        String placement = realPlacement(2);

        List<WorkerPlacement> workers = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            HttpResponse<String> stored =
                    importRank(placement, "r" + r, packed(placement, "r" + r));
            assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
            JsonNode template = json.readTree(stored.body());
            assertThat(template.path("fragments").asInt()).isEqualTo(3);
            String id = "w" + r + "-" + model;
            WorkerPlacement w =
                    new WorkerPlacement(
                            id,
                            "n0",
                            "eth0",
                            ConsumeMode.DIRECT,
                            List.of(new ReceiveBuffer(buffer, "rx-" + id, RANK_BYTES)));
            w.setRank(r);
            w.setPlacement(template.path("digest").asString());
            workers.add(w);
        }
        registerLoader("mc-" + model, new LoaderRegistration(model, "g", "n0", workers));

        PlanSummary plan = resolvePlan(model, generation, "g");

        assertThat(plan.getValid()).isTrue();
        // Each rank receives exactly its boxes; the whole manifest is read once.
        assertThat(plan.getDeliveryBytes()).isEqualTo(2 * RANK_BYTES);
        assertThat(plan.getStoreReadBytes()).isEqualTo(256 * 32 * 2 + 32 * 32 * 2 + 32 * 2);
    }

    @Test
    void theNextGenerationsPlacementNamesTheSameTemplate() throws Exception {
        String placement = realPlacement(2);
        String next = placement.replace("\"weight_generation\":0", "\"weight_generation\":7");
        assertThat(next).isNotEqualTo(placement);

        HttpResponse<String> now = importRank(placement, "r1", packed(placement, "r1"));
        HttpResponse<String> later = importRank(next, "r1", packed(next, "r1"));

        assertThat(now.statusCode()).as(now.body()).isEqualTo(200);
        assertThat(json.readTree(later.body()).path("digest").asString())
                .isEqualTo(json.readTree(now.body()).path("digest").asString());
    }

    @Test
    void whatOurPlacementsCannotTakeIsRefusedNamingThe3187Field() throws Exception {
        String placement = realPlacement(2);

        HttpResponse<String> stranger = importRank(placement, "r9", List.of());
        assertProblem(stranger, 422, "mooncake-3187-inexpressible");
        assertThat(stranger.body())
                .contains("\"field\":\"topology.participants[].participant_id\"")
                .contains("value r9");

        List<MooncakeFragmentBinding> short1 = packed(placement, "r1");
        String unbound = short1.remove(0).getPlacementFragmentId();
        HttpResponse<String> missing = importRank(placement, "r1", short1);
        assertProblem(missing, 422, "mooncake-3187-inexpressible");
        assertThat(missing.body())
                .contains("\"field\":\"parts[1].fragments[0].placement_fragment_id\"")
                .contains(unbound);

        assertProblem(importRank("{not json", "r0", List.of()), 400, "invalid-placement");
    }

    /** A TP placement of the test manifest, written by the real #3187 package. */
    private static String realPlacement(int tp) throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "mooncake-3187"));
        Path out = dir.resolve("tp" + tp + ".json");
        String venv = System.getenv().getOrDefault("WEIGHT_RELAY_VENV", "/opt/weight-relay/venv");
        Process process =
                new ProcessBuilder(
                                Path.of(venv, "bin", "python").toString(),
                                Path.of("src", "test", "python", "mooncake_tp_placement.py")
                                        .toString(),
                                String.valueOf(tp),
                                out.toString())
                        .redirectErrorStream(true)
                        .start();
        String said = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor())
                .as("the real #3187 package in %s (python/ci-venv.sh makes it): %s", venv, said)
                .isZero();
        return Files.readString(out, StandardCharsets.UTF_8);
    }
}
