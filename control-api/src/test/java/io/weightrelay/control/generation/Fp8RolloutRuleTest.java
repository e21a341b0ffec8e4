package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.common.model.RolloutQuantization;
import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.common.model.StoredFragment;
import io.weightrelay.api.common.model.TensorSpec;
import io.weightrelay.api.control.model.GenerationManifest;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.api.control.model.TensorAssignment;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** The open-generation request's block-FP8 rule: applied, stored, served, refused by name. */
class Fp8RolloutRuleTest extends ControlApiTestSupport {

    private static SourceManifest manifest(String model, RolloutQuantization rule) {
        SourceManifest m =
                manifestOf(
                        model,
                        tensor("model.embed_tokens.weight", 64, 32),
                        tensor("model.layers.0.self_attn.o_proj.weight", 300, 200).splitDim(1),
                        tensor("model.layers.0.mlp.gate.weight", 4, 32),
                        tensor("model.layers.0.post_attention_layernorm.weight", 32),
                        tensor("lm_head.weight", 64, 32));
        m.setRolloutQuantization(rule);
        return m;
    }

    private static RolloutQuantization fp8() {
        return new RolloutQuantization(RolloutQuantization.SchemeEnum.FP8_E4M3_BLOCK128);
    }

    @Test
    void theDefaultRuleQuantisesTheProjectionAndAddsItsScaleTensorToTheManifest() {
        String model = newModel();
        OpenedGeneration opened =
                ok(requestOpen(model, 1, manifest(model, fp8())), OpenedGeneration.class);
        long g = opened.getGeneration().getGeneration();

        GenerationManifest served =
                read(generationPath(model, g) + "/manifest", GenerationManifest.class);
        Map<String, TensorSpec> tensors =
                served.getManifest().getTensors().stream()
                        .collect(Collectors.toMap(TensorSpec::getName, t -> t));
        assertThat(served.getManifest().getTensors())
                .extracting(TensorSpec::getName)
                .containsExactly(
                        "model.embed_tokens.weight",
                        "model.layers.0.self_attn.o_proj.weight",
                        "model.layers.0.self_attn.o_proj.weight_scale_inv",
                        "model.layers.0.mlp.gate.weight",
                        "model.layers.0.post_attention_layernorm.weight",
                        "lm_head.weight");
        assertThat(tensors.get("model.layers.0.self_attn.o_proj.weight").getRolloutDtype())
                .isEqualTo(Dtype.FP8_E4M3);
        TensorSpec scale = tensors.get("model.layers.0.self_attn.o_proj.weight_scale_inv");
        assertThat(scale.getShape()).containsExactly(3L, 2L);
        assertThat(scale.getTrainerDtype()).isEqualTo(Dtype.FP32);
        assertThat(scale.getRolloutDtype()).isEqualTo(Dtype.FP32);
        assertThat(scale.getSplitDim()).isEqualTo(1);
        for (String kept :
                List.of(
                        "model.embed_tokens.weight",
                        "model.layers.0.mlp.gate.weight",
                        "model.layers.0.post_attention_layernorm.weight",
                        "lm_head.weight")) {
            assertThat(tensors.get(kept).getRolloutDtype()).as(kept).isEqualTo(Dtype.BF16);
        }
        assertThat(served.getManifest().getRolloutQuantization()).isEqualTo(fp8());

        // 200 bytes a row in FP8: each 4 KiB-bounded fragment is still one whole 128-row band
        List<StoredFragment> weight = new ArrayList<>();
        List<StoredFragment> scales = new ArrayList<>();
        for (StoredFragment f : served.getFragments()) {
            if (f.getTensor().equals("model.layers.0.self_attn.o_proj.weight")) {
                weight.add(f);
            } else if (f.getTensor().endsWith("_scale_inv")) {
                scales.add(f);
            }
        }
        assertThat(weight).extracting(f -> f.getShape().get(0)).containsExactly(128L, 128L, 44L);
        assertThat(weight)
                .extracting(StoredFragment::getBytes)
                .containsExactly(25600L, 25600L, 8800L);
        assertThat(scales).extracting(StoredFragment::getBytes).containsExactly(8L, 8L, 8L);

        // the scale tensor is published by the node that converts its weight
        Map<String, String> node =
                opened.getAssignment().getTensors().stream()
                        .collect(
                                Collectors.toMap(
                                        TensorAssignment::getTensor, TensorAssignment::getNode));
        assertThat(node.get("model.layers.0.self_attn.o_proj.weight_scale_inv"))
                .isEqualTo(node.get("model.layers.0.self_attn.o_proj.weight"));

        // opening the same step again is idempotent, with the rule or with the served manifest
        assertThat(requestOpen(model, 1, manifest(model, fp8())).statusCode()).isEqualTo(200);
        SourceManifest again = served.getManifest();
        assertThat(requestOpen(model, 1, again).statusCode()).isEqualTo(200);
        // the rule changes the manifest: the same step without it is another manifest
        assertThat(requestOpen(model, 1, manifest(model, null)).statusCode()).isEqualTo(409);
    }

    @Test
    void aSelectedTensorThatIsNot2dIsRefusedNamingTheTensorAndThePattern() {
        String model = newModel();
        // exclusions win over inclusions, so the default ones (which keep norms) are replaced
        RolloutQuantization rule =
                fp8().include(List.of("*_proj.weight", "*layernorm*")).exclude(List.of());
        HttpResponse<String> refused = requestOpen(model, 1, manifest(model, rule));
        assertProblem(refused, 400, "invalid-manifest");
        JsonNode body = json.readTree(refused.body());
        assertThat(body.get("tensor").asString())
                .isEqualTo("model.layers.0.post_attention_layernorm.weight");
        assertThat(body.get("pattern").asString()).isEqualTo("*layernorm*");
        assertThat(body.get("detail").asString()).contains("shape [32]").contains("2-D");
    }

    @Test
    void aBadPatternIsRefusedNamingIt() {
        String model = newModel();
        HttpResponse<String> refused =
                requestOpen(model, 1, manifest(model, fp8().exclude(List.of("lm head"))));
        assertProblem(refused, 400, "invalid-manifest");
        assertThat(json.readTree(refused.body()).get("pattern").asString()).isEqualTo("lm head");
    }

    @Test
    void anFp8RolloutDtypeWithoutItsScalesIsRefusedNamingTheScaleTensor() {
        String model = newModel();
        SourceManifest m = manifest(model, null);
        m.getTensors().get(1).setRolloutDtype(Dtype.FP8_E4M3);
        HttpResponse<String> refused = requestOpen(model, 1, m);
        assertProblem(refused, 400, "invalid-manifest");
        assertThat(refused.body()).contains("model.layers.0.self_attn.o_proj.weight_scale_inv");
    }

    @Test
    void theContractsDefaultPatternsAreTheRulesDefaults() {
        assertThat(fp8().getInclude()).isEqualTo(Fp8BlockRule.DEFAULT_INCLUDE);
        assertThat(fp8().getExclude()).isEqualTo(Fp8BlockRule.DEFAULT_EXCLUDE);
        assertThat(fp8().getScheme().getValue()).isEqualTo(Fp8BlockRule.SCHEME);
    }

    @Test
    void withoutTheRuleNothingChanges() {
        String model = newModel();
        long g =
                ok(requestOpen(model, 1, manifest(model, null)), OpenedGeneration.class)
                        .getGeneration()
                        .getGeneration();
        GenerationManifest served =
                read(generationPath(model, g) + "/manifest", GenerationManifest.class);
        assertThat(served.getManifest().getTensors())
                .hasSize(5)
                .allMatch(t -> t.getRolloutDtype() == Dtype.BF16);
        assertThat(served.getManifest().getRolloutQuantization()).isNull();
    }
}
