package io.weightrelay.publisher.publish;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.publisher.model.Dtype;
import io.weightrelay.api.publisher.model.StagedTensor;
import io.weightrelay.publisher.convert.Conversion;
import io.weightrelay.publisher.convert.ElementType;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The batch layout is arithmetic over offsets: plain JUnit, no staging, no store. */
class BatchLayoutTest {

    /** fp32 [4, 8] stored as bf16 in two fragments of 16 elements. */
    private static final GenerationLayout.Tensor W =
            new GenerationLayout.Tensor(
                    "w",
                    List.of(4L, 8L),
                    ElementType.FP32,
                    ElementType.BF16,
                    32,
                    List.of(
                            new GenerationLayout.Fragment("w.0", 0, 16),
                            new GenerationLayout.Fragment("w.1", 16, 16)),
                    null);

    /** bf16 [2, 4] stored as it is. */
    private static final GenerationLayout.Tensor E =
            new GenerationLayout.Tensor(
                    "e",
                    List.of(2L, 4L),
                    ElementType.BF16,
                    ElementType.BF16,
                    8,
                    List.of(new GenerationLayout.Fragment("e.0", 0, 8)),
                    null);

    /** bf16 [2, 128] stored as block-FP8, one block, its 4 scale bytes in object f8.s. */
    private static final GenerationLayout.Tensor F8 =
            new GenerationLayout.Tensor(
                    "f8",
                    List.of(2L, 128L),
                    ElementType.BF16,
                    ElementType.FP8_E4M3,
                    256,
                    List.of(new GenerationLayout.Fragment("f8.0", 0, 256, "f8.s", 4)),
                    null);

    /** The scales of f8: computed by the publisher, never sent. */
    private static final GenerationLayout.Tensor F8_SCALES =
            new GenerationLayout.Tensor(
                    "f8.scales",
                    List.of(1L, 1L),
                    ElementType.FP32,
                    ElementType.FP32,
                    1,
                    List.of(new GenerationLayout.Fragment("f8.s", 0, 1)),
                    "f8");

    /** int32 asked for as fp16: no conversion leads there. */
    private static final GenerationLayout.Tensor I =
            new GenerationLayout.Tensor(
                    "i",
                    List.of(4L),
                    ElementType.INT32,
                    ElementType.FP16,
                    4,
                    List.of(new GenerationLayout.Fragment("i.0", 0, 4)),
                    null);

    private static final GenerationLayout LAYOUT =
            new GenerationLayout(
                    "m", 7, Map.of("w", W, "e", E, "f8", F8, "f8.scales", F8_SCALES, "i", I));

    private static final StagingArea.Reservation RESERVATION =
            new StagingArea.Reservation("r1", 1024, 65536, Instant.EPOCH, true);

    private static StagedTensor staged(String name, Dtype dtype, List<Long> shape, long at) {
        long elements = shape.stream().reduce(1L, (a, b) -> a * b);
        long width = ElementType.ofApiName(dtype.getValue()).bytes();
        return new StagedTensor()
                .name(name)
                .dtype(dtype)
                .shape(shape)
                .stagingOffset(at)
                .bytes(elements * width);
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
