package io.weightrelay.control.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TargetFragment;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The layout rules on their own: which strided layouts pass, which are refused and as what. */
class PlacementChecksTest {

    private static final Map<String, TensorSpec> TENSORS =
            Map.of(
                    "w", new TensorSpec("w", Shape.of(8, 6), DType.F32, DType.BF16),
                    "s", new TensorSpec("s", Shape.of(), DType.F32, DType.F32),
                    "t", new TensorSpec("t", Shape.of(), DType.F32, DType.F32));

    private static TargetFragment box(
            String tensor, long[] offset, long[] shape, long bufferOffset, long... strides) {
        return new TargetFragment(
                tensor, longs(offset), longs(shape), "buf", bufferOffset, longs(strides));
    }

    private static List<Long> longs(long[] values) {
        return java.util.Arrays.stream(values).boxed().toList();
    }

    private static long[] of(long... values) {
        return values;
    }

    private static WorkerPlacement worker(long bufferBytes, TargetFragment... fragments) {
        WorkerPlacement w =
                new WorkerPlacement(
                        "w0",
                        "n0",
                        "eth0",
                        ConsumeMode.DIRECT,
                        List.of(new ReceiveBuffer("buf", "seg", bufferBytes)));
        w.setFragments(List.of(fragments));
        return w;
    }

    private static void bothPass(WorkerPlacement w) {
        assertThatCode(() -> PlacementChecks.registration("i0", w)).doesNotThrowAnyException();
        assertThatCode(() -> PlacementChecks.againstManifest("i0", w, TENSORS, 0))
                .doesNotThrowAnyException();
    }

    private static void refusedAtRegistration(WorkerPlacement w, ProblemKind kind) {
        assertThatThrownBy(() -> PlacementChecks.registration("i0", w))
                .isInstanceOfSatisfying(
                        RelayException.class, ex -> assertThat(ex.kind()).isEqualTo(kind));
    }

    private static void refusedAtPlan(WorkerPlacement w, ProblemKind kind) {
        assertThatThrownBy(() -> PlacementChecks.againstManifest("i0", w, TENSORS, 0))
                .isInstanceOfSatisfying(
                        RelayException.class, ex -> assertThat(ex.kind()).isEqualTo(kind));
    }

    @Test
    void interleavedColumnsAndTransposedRowsPass() {
        // Columns [0, 3) and [3, 6) of an [8, 6] bf16 buffer: rows of 12 bytes.
        bothPass(
                worker(
                        96,
                        box("w", of(0, 0), of(8, 3), 0, 12, 2),
                        box("w", of(0, 3), of(8, 3), 6, 12, 2)));
        // Padded rows (16 bytes) are fine too: the padding is never written.
        bothPass(worker(8 * 16, box("w", of(0, 0), of(8, 6), 0, 16, 2)));
        // A box whose unit dimensions carry any stride.
        bothPass(worker(12, box("w", of(0, 0), of(1, 6), 0, 999, 2)));
    }

    @Test
    void everyInterleavingThatSharesAByteIsFound() {
        for (long shift = 1; shift < 6; shift++) {
            WorkerPlacement w =
                    worker(
                            200,
                            box("w", of(0, 0), of(8, 3), 0, 12, 2),
                            box("w", of(0, 3), of(8, 3), 6 - shift, 12, 2));
            assertThatThrownBy(() -> PlacementChecks.registration("i0", w))
                    .isInstanceOfSatisfying(
                            RelayException.class,
                            ex -> {
                                assertThat(ex.kind()).isEqualTo(RegistryProblems.PLACEMENT_OVERLAP);
                                assertThat(ex.getBody().getProperties())
                                        .containsEntry("instanceId", "i0")
                                        .containsEntry("worker", "w0")
                                        .containsEntry("bufferId", "buf");
                            });
        }
    }

    @Test
    void transposedLayoutsAreRefused() {
        // Column-major [8, 6]: strides (2, 16). The elements do not overlap, but the loader and
        // the engines take the innermost stride as the element size and the innermost dimension
        // as dense.
        WorkerPlacement w = worker(96, box("w", of(0, 0), of(8, 6), 0, 2, 16));
        refusedAtRegistration(w, RegistryProblems.PLACEMENT_BAD_STRIDES);
        refusedAtPlan(w, RegistryProblems.PLACEMENT_DTYPE_MISMATCH);
    }

    @Test
    void fp32StridesPassRegistrationButNotABf16Manifest() {
        WorkerPlacement w = worker(192, box("w", of(0, 0), of(8, 6), 0, 24, 4));
        assertThatCode(() -> PlacementChecks.registration("i0", w)).doesNotThrowAnyException();
        refusedAtPlan(w, RegistryProblems.PLACEMENT_DTYPE_MISMATCH);
    }

    @Test
    void scalarsTakeTheirSizeFromTheManifest() {
        // Registration assumes one byte per scalar; the plan knows they are 4-byte F32.
        WorkerPlacement w = worker(16, box("s", of(), of(), 0), box("t", of(), of(), 2));
        assertThatCode(() -> PlacementChecks.registration("i0", w)).doesNotThrowAnyException();
        refusedAtPlan(w, RegistryProblems.PLACEMENT_OVERLAP);
        refusedAtPlan(
                worker(3, box("s", of(), of(), 0)), RegistryProblems.PLACEMENT_OUTSIDE_BUFFER);
        bothPass(worker(8, box("s", of(), of(), 0), box("t", of(), of(), 4)));
    }

    /**
     * What the lab's engines register (RolloutEngine: one dense buffer per parameter, sized to its
     * box) and a packed variant (every box of a worker back to back in one buffer) pass both stages
     * for the catalogue's layouts.
     */
    @ParameterizedTest
    @CsvSource({"tiny,2", "tiny,4", "qwen2.5-0.5b,2", "llama3-70b,8"})
    void catalogPlacementsPass(String model, int tp) {
        Map<String, TensorSpec> tensors = new HashMap<>();
        ModelCatalog.tensors(model).forEach(t -> tensors.put(t.name(), t));
        TargetPlacement placement =
                Placements.of(ModelCatalog.layout(model), 1, 1, tp, 1, Mode.DIRECT, 1);
        for (Worker w : placement.workers()) {
            for (boolean packed : new boolean[] {false, true}) {
                WorkerPlacement p = registered(w, packed);
                assertThatCode(() -> PlacementChecks.registration("i0", p))
                        .doesNotThrowAnyException();
                assertThatCode(() -> PlacementChecks.againstManifest("i0", p, tensors, 0))
                        .doesNotThrowAnyException();
            }
        }
    }

    private static WorkerPlacement registered(Worker w, boolean packed) {
        Map<String, Long> sizes = new LinkedHashMap<>();
        List<TargetFragment> fragments = new ArrayList<>();
        long cursor = 0;
        for (io.weightrelay.reshard.placement.TargetFragment f : w.fragments()) {
            long bytes = Math.max(1, f.bytes());
            String buffer = packed ? "all" : f.buffer();
            long offset = packed ? cursor : f.bufferOffset();
            cursor += bytes;
            sizes.merge(buffer, offset + bytes, Math::max);
            fragments.add(
                    new TargetFragment(
                            f.tensor(),
                            longs(f.offset().dims()),
                            longs(f.shape().dims()),
                            buffer,
                            offset,
                            longs(f.strides().dims())));
        }
        List<ReceiveBuffer> buffers = new ArrayList<>();
        sizes.forEach((id, size) -> buffers.add(new ReceiveBuffer(id, w.segment(), size)));
        WorkerPlacement p =
                new WorkerPlacement(w.id(), w.node(), "eth0", ConsumeMode.DIRECT, buffers);
        p.setFragments(fragments);
        return p;
    }

    @Test
    void emptyBoxesPlaceNothing() {
        bothPass(worker(1, box("w", of(0, 0), of(0, 6), 0, 0, 0)));
    }

    @Test
    void hugeStridesDoNotOverflow() {
        WorkerPlacement w = worker(96, box("w", of(0, 0), of(8, 6), 0, Long.MAX_VALUE / 4, 2));
        refusedAtRegistration(w, RegistryProblems.PLACEMENT_OUTSIDE_BUFFER);
    }
}
