package io.weightrelay.publisher.publish;

import static io.weightrelay.reshard.manifest.DType.BF16;
import static io.weightrelay.reshard.manifest.DType.F16;
import static io.weightrelay.reshard.manifest.DType.F32;
import static io.weightrelay.reshard.manifest.DType.F8_E4M3;
import static io.weightrelay.reshard.manifest.DType.I32;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.publisher.model.StagedTensor;
import io.weightrelay.publisher.convert.Conversion;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The batch layout is arithmetic over offsets: plain JUnit, no staging, no store. */
class BatchLayoutTest {

    /**
     * w: fp32 [4, 8] stored as bf16 in two fragments of 16 elements; e: bf16 stored as it is; f8:
     * bf16 [2, 128] stored as block-FP8, one block, its 4 scale bytes in object f8.s; f8.scales:
     * those scales, computed by the publisher and never sent; i: int32 asked for as fp16, which no
     * conversion leads to.
     */
    private static final GenerationLayout LAYOUT =
            new GenerationLayout(
                    new GenerationId("m", 7),
                    Map.of(
                            "w", tensor("w", F32, BF16, null, 4, 8),
                            "e", tensor("e", BF16, BF16, null, 2, 4),
                            "f8", tensor("f8", BF16, F8_E4M3, null, 2, 128),
                            "f8.scales", tensor("f8.scales", F32, F32, "f8", 1, 1),
                            "i", tensor("i", I32, F16, null, 4)));

    private static final GenerationLayout.Tensor W = LAYOUT.tensor("w").orElseThrow();
    private static final GenerationLayout.Tensor E = LAYOUT.tensor("e").orElseThrow();
    private static final GenerationLayout.Tensor F8 = LAYOUT.tensor("f8").orElseThrow();
    private static final GenerationLayout.Tensor F8_SCALES =
            LAYOUT.tensor("f8.scales").orElseThrow();
    private static final GenerationLayout.Tensor I = LAYOUT.tensor("i").orElseThrow();

    private static final StagingArea.Reservation RESERVATION =
            new StagingArea.Reservation("r1", 1024, 65536, Instant.EPOCH, true);

    /** A tensor of {@code dims}: w in two fragments, f8 with its scale object, else one. */
    private static GenerationLayout.Tensor tensor(
            String name, DType trainer, DType rollout, String scalesOf, long... dims) {
        List<Long> shape = Arrays.stream(dims).boxed().toList();
        long elements = elements(shape);
        List<GenerationLayout.Fragment> fragments =
                switch (name) {
                    case "w" ->
                            List.of(
                                    new GenerationLayout.Fragment("w.0", 0, 16),
                                    new GenerationLayout.Fragment("w.1", 16, 16));
                    case "f8" -> List.of(new GenerationLayout.Fragment("f8.0", 0, 256, "f8.s", 4));
                    case "f8.scales" -> List.of(new GenerationLayout.Fragment("f8.s", 0, 1));
                    default -> List.of(new GenerationLayout.Fragment(name + ".0", 0, elements));
                };
        return new GenerationLayout.Tensor(
                name, shape, trainer, rollout, elements, fragments, scalesOf);
    }

    private static long elements(List<Long> shape) {
        return shape.stream().reduce(1L, (a, b) -> a * b);
    }

    private static StagedTensor staged(String name, Dtype dtype, List<Long> shape, long at) {
        long width = DType.ofWireName(dtype.getValue()).bytes();
        return new StagedTensor()
                .name(name)
                .dtype(dtype)
                .shape(shape)
                .stagingOffset(at)
                .bytes(elements(shape) * width)
                .checksum("crc32c:00000000"); // layout only: no byte is checked here
    }

    private static BatchLayout of(StagedTensor... tensors) {
        return BatchLayout.of(LAYOUT, RESERVATION, List.of(tensors));
    }

    @Test
    void wholeTensorsMapOntoTheirFragmentsInPlace() {
        BatchLayout batch =
                of(
                        staged("w", Dtype.FP32, W.shape(), 1024),
                        staged("e", Dtype.BF16, E.shape(), 1152));

        assertThat(batch.works())
                .containsExactly(
                        new BatchLayout.Work(
                                "w.0", 0, 1024, 64, Conversion.FP32_TO_BF16, 1024, null),
                        new BatchLayout.Work(
                                "w.1", 0, 1088, 64, Conversion.FP32_TO_BF16, 1088, null),
                        new BatchLayout.Work(
                                "e.0", 1, 1152, 16, Conversion.PASS_THROUGH, 1152, null));
        assertThat(batch.works()).allMatch(BatchLayout.Work::inPlace);
        assertThat(batch.keys()).containsExactly("w.0", "w.1", "e.0");
        assertThat(batch.works().get(0).outputBytes()).isEqualTo(32);
    }

    @Test
    void aPartCoversExactlyTheFragmentsInsideIt() {
        StagedTensor secondHalf =
                staged("w", Dtype.FP32, W.shape(), 2048).tensorOffset(64L).bytes(64L);

        assertThat(of(secondHalf).works())
                .containsExactly(
                        new BatchLayout.Work(
                                "w.1", 0, 2048, 64, Conversion.FP32_TO_BF16, 2048, null));
    }

    @Test
    void blockScalesFollowTheE4m3OutputInsideTheFragmentsOwnInput() {
        BatchLayout batch = of(staged("f8", Dtype.BF16, F8.shape(), 4096));

        BatchLayout.Work work = batch.works().get(0);
        assertThat(work.conversion()).isEqualTo(Conversion.BF16_TO_FP8_BLOCK);
        assertThat(work.sourceBytes()).isEqualTo(512);
        assertThat(work.outputBytes()).isEqualTo(256);
        assertThat(work.scales()).isEqualTo(new BatchLayout.Scales("f8.s", 2, 128, 4, 4096 + 256));
        assertThat(batch.keys()).containsExactly("f8.0", "f8.s");
    }

    @Test
    void convertedFragmentsGoOneAfterAnotherIntoTheOutputBlockAligned() {
        BatchLayout batch =
                of(
                        staged("w", Dtype.FP32, W.shape(), 1024),
                        staged("e", Dtype.BF16, E.shape(), 1152),
                        staged("f8", Dtype.BF16, F8.shape(), 4096));

        // w.0 and w.1: 32 bytes each, aligned to 64; f8.0: 256 bytes, then its 4 scale bytes
        // aligned to 64; e.0 passes through and needs no room.
        assertThat(batch.outputBlockBytes()).isEqualTo(64 + 64 + 256 + 64);
        BatchLayout placed = batch.inOutputBlock(100_032);

        assertThat(placed.works())
                .extracting(BatchLayout.Work::outputOffset)
                .containsExactly(100_032L, 100_096L, 1152L, 100_160L);
        assertThat(placed.works())
                .extracting(BatchLayout.Work::stagingOffset)
                .containsExactly(1024L, 1088L, 1152L, 4096L);
        assertThat(placed.works().get(3).scales().offset()).isEqualTo(100_160L + 256);
        assertThat(placed.works())
                .extracting(BatchLayout.Work::inPlace)
                .containsExactly(false, false, true, false);
        assertThat(placed.keys()).isEqualTo(batch.keys());
    }

    @Test
    void aBatchThatConvertsNothingNeedsNoOutputBlock() {
        assertThat(of(staged("e", Dtype.BF16, E.shape(), 1152)).outputBlockBytes()).isZero();
    }

    @Test
    void whatTheManifestDoesNotSayIsRefusedBeforeAnyByteIsTouched() {
        StagedTensor w = staged("w", Dtype.FP32, W.shape(), 1024);
        refused(
                staged("nope", Dtype.FP32, W.shape(), 1024),
                PublishProblems.MANIFEST_MISMATCH,
                "not in the manifest");
        refused(
                staged("f8.scales", Dtype.FP32, F8_SCALES.shape(), 1024),
                PublishProblems.MANIFEST_MISMATCH,
                "ranks do not send it");
        refused(
                staged("w", Dtype.BF16, W.shape(), 1024),
                PublishProblems.MANIFEST_MISMATCH,
                "the batch says bf16");
        refused(
                staged("w", Dtype.FP32, List.of(8L, 4L), 1024),
                PublishProblems.MANIFEST_MISMATCH,
                "the batch says fp32[8, 4]");
        refused(
                staged("w", Dtype.FP32, W.shape(), 1024 + 65536 - 64),
                PublishProblems.MANIFEST_MISMATCH,
                "outside reservation r1");
        refused(
                staged("w", Dtype.FP32, W.shape(), 1024).bytes(66L),
                PublishProblems.MANIFEST_MISMATCH,
                "not whole elements");
        refused(
                staged("w", Dtype.FP32, W.shape(), 1024).tensorOffset(64L),
                PublishProblems.MANIFEST_MISMATCH,
                "ends after the tensor");
        refused(
                staged("w", Dtype.FP32, W.shape(), 1024).bytes(32L),
                PublishProblems.MANIFEST_MISMATCH,
                "cuts fragment w.0");
        refused(
                staged("i", Dtype.INT32, I.shape(), 1024),
                PublishProblems.UNSUPPORTED_CONVERSION,
                "no conversion from int32 to fp16");
        assertThat(of(w).works()).hasSize(2);
    }

    private static void refused(StagedTensor tensor, ProblemKind kind, String detail) {
        assertThatThrownBy(() -> of(tensor))
                .isInstanceOfSatisfying(
                        RelayException.class,
                        e -> {
                            assertThat(e.kind()).isEqualTo(kind);
                            assertThat(e.getBody().getDetail()).contains(detail);
                        });
    }
}
