package io.weightrelay.reshard.placement;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Shape;
import org.junit.jupiter.api.Test;

class TargetFragmentTest {

    @Test
    void aDenseBoxEndsAfterItsLastElement() {
        TargetFragment f =
                TargetFragment.dense(
                        "w", DType.BF16, Shape.of(4, 6), Shape.of(2, 0), Shape.of(2, 3), "b", 10);
        assertThat(f.bufferEnd()).isEqualTo(10 + 2 * 3 * 2);
    }

    @Test
    void aStridedBoxEndsAfterItsLastElementNotAfterItsPadding() {
        // rows 16 bytes apart, 3 bf16 elements each: the last row ends 6 bytes in
        TargetFragment f =
                new TargetFragment(
                        "w",
                        DType.BF16,
                        Shape.of(4, 6),
                        Shape.of(0, 0),
                        Shape.of(2, 3),
                        "b",
                        100,
                        Shape.of(16, 2));
        assertThat(f.bufferEnd()).isEqualTo(100 + 16 + 3 * 2);
    }

    @Test
    void anEmptyBoxOccupiesNothing() {
        TargetFragment f =
                TargetFragment.dense(
                        "w", DType.F32, Shape.of(4, 0), Shape.of(0, 0), Shape.of(4, 0), "b", 64);
        assertThat(f.bufferEnd()).isEqualTo(64);
    }
}
