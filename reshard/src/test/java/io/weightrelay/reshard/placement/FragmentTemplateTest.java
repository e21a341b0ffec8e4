package io.weightrelay.reshard.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.codec.CodecException;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FragmentTemplateTest {

    @Test
    void roundTripsWithTheSameDigest() {
        FragmentTemplate t =
                FragmentTemplate.of(
                        List.of(
                                new FragmentTemplate.Entry(
                                        "model.layers.0.mlp.weight",
                                        new long[] {0, 16},
                                        new long[] {8, 16},
                                        "all",
                                        0,
                                        new long[] {32, 2}),
                                new FragmentTemplate.Entry(
                                        "model.layers.0.mlp.bias",
                                        new long[] {},
                                        new long[] {},
                                        "other",
                                        4096,
                                        new long[] {})));
        FragmentTemplate back = FragmentTemplate.decode(t.encoded());
        assertThat(back.digest()).isEqualTo(t.digest()).hasSize(64);
        assertThat(back.size()).isEqualTo(2);
        FragmentTemplate.Entry e = back.entries().get(0);
        assertThat(e.tensor()).isEqualTo("model.layers.0.mlp.weight");
        assertThat(e.offset()).containsExactly(0, 16);
        assertThat(e.strides()).containsExactly(32, 2);
        assertThat(back.entries().get(1).tensor()).isEqualTo("model.layers.0.mlp.bias");
        assertThat(back.entries().get(1).buffer()).isEqualTo("other");
        assertThat(back.entries().get(1).bufferOffset()).isEqualTo(4096);
    }

    @Test
    void anEntryTypedByItsTensorIsThePlannersFragmentAgain() {
        TargetPlacement placement =
                Placements.of(ModelCatalog.layout("tiny"), 1, 4, 2, 1, Mode.DIRECT, 1);
        Map<String, TensorSpec> specs = new HashMap<>();
        for (TensorLayout t : ModelCatalog.layout("tiny")) {
            specs.put(t.spec().name(), t.spec());
        }
        for (TargetFragment f : placement.workers().get(0).fragments()) {
            FragmentTemplate.Entry e = FragmentTemplate.ofFragments(List.of(f)).entries().get(0);
            assertThat(e.typed(specs.get(f.tensor()))).isEqualTo(f);
        }
        FragmentTemplate.Entry wrongRank =
                new FragmentTemplate.Entry(
                        "x", new long[] {0}, new long[] {4}, "all", 0, new long[] {2});
        assertThatThrownBy(
                        () ->
                                wrongRank.typed(
                                        new TensorSpec(
                                                "x", Shape.of(4, 4), DType.BF16, DType.BF16)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void everyInstanceOfALayoutSharesOneTemplatePerRank() {
        TargetPlacement placement =
                Placements.of(ModelCatalog.layout("tiny"), 1, 4, 2, 1, Mode.DIRECT, 1);
        long distinct =
                placement.workers().stream()
                        .map(w -> FragmentTemplate.ofFragments(w.fragments()).digest())
                        .distinct()
                        .count();
        assertThat(distinct).isEqualTo(2);
    }

    @Test
    void aKimiScaleRankIsSmall() {
        TargetPlacement placement =
                Placements.of(ModelCatalog.layout("kimi-k2"), 1, 1, 8, 8, Mode.DIRECT, 8);
        for (Worker w : placement.workers()) {
            FragmentTemplate t = FragmentTemplate.ofFragments(w.fragments());
            // front-coded names and varints: under 64 bytes a fragment, though the catalogue names
            // a buffer per tensor
            assertThat(t.encoded().length).isLessThan(64 * t.size());
            assertThat(FragmentTemplate.decode(t.encoded()).digest()).isEqualTo(t.digest());
        }
    }

    @Test
    void corruptInputFailsClosed() {
        byte[] bytes =
                FragmentTemplate.ofFragments(
                                Placements.of(
                                                ModelCatalog.layout("tiny"),
                                                1,
                                                1,
                                                2,
                                                1,
                                                Mode.DIRECT,
                                                1)
                                        .workers()
                                        .get(0)
                                        .fragments())
                        .encoded();
        assertThatThrownBy(() -> FragmentTemplate.decode(Arrays.copyOf(bytes, bytes.length - 1)))
                .isInstanceOf(CodecException.class);
        assertThatThrownBy(() -> FragmentTemplate.decode(new byte[] {1, 2, 3}))
                .isInstanceOf(CodecException.class);
    }
}
