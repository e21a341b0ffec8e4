package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.common.model.RolloutQuantization;
import io.weightrelay.api.common.model.SourceManifest;
import io.weightrelay.api.common.model.TensorSpec;
import io.weightrelay.control.redis.StoredRoundTrip;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** A stored source manifest, spelled out: the JSON in Redis is ours, not the contract's. */
class StoredManifestTest {

    private static final String KEY = "wr:manifest:kimi:sha256:m";

    static final String GOLDEN =
            "{\"format\":1,\"model\":\"kimi\",\"tensors\":["
                    + "{\"name\":\"layers.0.q_proj.weight\",\"shape\":[256,128],"
                    + "\"trainerDtype\":\"bf16\",\"rolloutDtype\":\"fp8_e4m3\",\"splitDim\":0},"
                    + "{\"name\":\"layers.0.q_proj.weight_scale_inv\",\"shape\":[2,1],"
                    + "\"trainerDtype\":\"fp32\",\"rolloutDtype\":\"fp32\"},"
                    + "{\"name\":\"experts.3.w\",\"shape\":[64],\"trainerDtype\":\"fp32\","
                    + "\"rolloutDtype\":\"bf16\",\"splitDim\":-1,\"expert\":3}],"
                    + "\"maxFragmentBytes\":65536,\"rolloutQuantization\":"
                    + "{\"scheme\":\"fp8-e4m3-block128\","
                    + "\"include\":[\"*_proj.weight\",\"*_proj_with_mqa.weight\",\"*.experts.*.weight\"],"
                    + "\"exclude\":[\"*embed*\",\"*norm*\",\"lm_head*\",\"*.gate.weight\",\"*router*\"]}}";

    /** What releases before formats wrote: the generated {@code SourceManifest}'s JSON. */
    static final String BEFORE_FORMATS =
            "{\"model\":\"kimi\",\"tensors\":["
                    + "{\"name\":\"layers.0.q_proj.weight\",\"shape\":[256,128],"
                    + "\"trainerDtype\":\"bf16\",\"rolloutDtype\":\"fp8_e4m3\",\"splitDim\":0},"
                    + "{\"name\":\"layers.0.q_proj.weight_scale_inv\",\"shape\":[2,1],"
                    + "\"trainerDtype\":\"fp32\",\"rolloutDtype\":\"fp32\"},"
                    + "{\"name\":\"experts.3.w\",\"shape\":[64],\"trainerDtype\":\"fp32\","
                    + "\"rolloutDtype\":\"bf16\",\"expert\":3,\"splitDim\":-1}],"
                    + "\"maxFragmentBytes\":65536,\"rolloutQuantization\":"
                    + "{\"scheme\":\"fp8-e4m3-block128\","
                    + "\"exclude\":[\"*embed*\",\"*norm*\",\"lm_head*\",\"*.gate.weight\",\"*router*\"],"
                    + "\"include\":[\"*_proj.weight\",\"*_proj_with_mqa.weight\",\"*.experts.*.weight\"]}}";

    private final JsonMapper json = JsonMapper.builder().build();

    private final StoredRoundTrip<StoredManifest, SourceManifest> trip =
            new StoredRoundTrip<>(
                    StoredManifest.class, KEY, StoredManifest::read, StoredManifest::toApi);

    private static SourceManifest manifest() {
        return new SourceManifest(
                        "kimi",
                        List.of(
                                new TensorSpec(
                                                "layers.0.q_proj.weight",
                                                List.of(256L, 128L),
                                                Dtype.BF16,
                                                Dtype.FP8_E4M3)
                                        .splitDim(0),
                                new TensorSpec(
                                        "layers.0.q_proj.weight_scale_inv",
                                        List.of(2L, 1L),
                                        Dtype.FP32,
                                        Dtype.FP32),
                                new TensorSpec("experts.3.w", List.of(64L), Dtype.FP32, Dtype.BF16)
                                        .splitDim(-1)
                                        .expert(3)))
                .maxFragmentBytes(65536L)
                .rolloutQuantization(
                        new RolloutQuantization(RolloutQuantization.SchemeEnum.FP8_E4M3_BLOCK128));
    }

    @Test
    void writesTheGoldenJson() {
        trip.writes(StoredManifest.of(manifest()), GOLDEN);
    }

    @Test
    void readsWhatItWrites() {
        trip.readsBack(GOLDEN, StoredManifest.of(manifest()), manifest());
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        trip.readsBeforeFormats(BEFORE_FORMATS, manifest());
    }

    @Test
    void readsAManifestWithoutTheOptionalMembers() {
        SourceManifest plain =
                new SourceManifest(
                        "m", List.of(new TensorSpec("w", List.of(4L), Dtype.FP32, Dtype.FP32)));
        String stored = StoredManifest.of(plain).write(json);
        assertThat(stored)
                .isEqualTo(
                        "{\"format\":1,\"model\":\"m\",\"tensors\":[{\"name\":\"w\",\"shape\":[4],"
                                + "\"trainerDtype\":\"fp32\",\"rolloutDtype\":\"fp32\"}]}");
        assertThat(StoredManifest.read(json, KEY, stored).toApi()).isEqualTo(plain);
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        trip.refuses("{\"format\":2,\"tensors\":\"columns\"}", 2);
    }
}
