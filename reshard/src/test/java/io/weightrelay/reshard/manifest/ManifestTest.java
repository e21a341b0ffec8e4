package io.weightrelay.reshard.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class ManifestTest {
    private static final TensorSpec EMBED =
            new TensorSpec("embed", Shape.of(1000, 64), DType.F32, DType.BF16);
    private static final TensorSpec NORM =
            new TensorSpec("norm", Shape.of(64), DType.F32, DType.F32);
    private static final TensorSpec SCALE =
            new TensorSpec("scale", Shape.of(), DType.F32, DType.F32);

    @Test
    void fragmentsAreBoundedContiguousDimZeroSlicesThatTileTheTensor() {
        List<StoredFragment> parts = Fragmenter.fragmentsOf(EMBED, 10_000);
        long row = 0;
        for (StoredFragment f : parts) {
            assertThat(f.offset().dims()).containsExactly(row, 0);
            assertThat(f.shape().dim(1)).isEqualTo(64);
            assertThat(f.bytes()).isLessThanOrEqualTo(10_000).isEqualTo(f.shape().numel() * 2);
            row += f.shape().dim(0);
        }
        assertThat(row).isEqualTo(1000);
        assertThat(parts.get(0).fragment()).isEqualTo("embed@0");
        assertThat(new GenerationId("m", 7).objectKey(parts.get(0).fragment()))
                .isEqualTo("m/7/embed@0");
        assertThat(Fragmenter.fragmentsOf(SCALE, 1)).hasSize(1);
    }

    @Test
    void aManifestCutIntoMoreFragmentsThanAGenerationHoldsIsRefusedBeforeAnyIsBuilt() {
        // 250 G rows of 4 bytes at 4 KiB per fragment: 245 M fragments, which would fill any heap.
        TensorSpec huge = new TensorSpec("huge", Shape.of(250_551_608_538L), DType.F32, DType.F32);
        assertThatThrownBy(() -> Fragmenter.fragment("m", List.of(huge), 4096))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("m's manifest")
                .hasMessageContaining("more than " + Fragmenter.MAX_FRAGMENTS)
                .hasMessageContaining("raise maxFragmentBytes");
        assertThatThrownBy(() -> Fragmenter.fragmentsOf(huge, 4096))
                .hasMessageContaining("tensor huge");
        // Tensors that each stay under the bound count together.
        TensorSpec rows = new TensorSpec("rows", Shape.of(600_000, 1), DType.F32, DType.F32);
        assertThat(Fragmenter.fragmentsOf(rows, 4)).hasSize(600_000);
        TensorSpec more = new TensorSpec("more", Shape.of(600_000, 1), DType.F32, DType.F32);
        assertThatThrownBy(() -> Fragmenter.fragment("m", List.of(rows, more), 4))
                .hasMessageContaining("m's manifest");
        assertThat(Fragmenter.fragment("m", List.of(huge), 1L << 40).fragments()).hasSize(1);
    }

    @Test
    void manifestRoundTripsAndItsDigestIgnoresHints() {
        SourceManifest m = Fragmenter.fragment("m", List.of(EMBED, NORM, SCALE), 4096);
        SourceManifest hinted =
                new SourceManifest(
                        m.model(),
                        m.tensors(),
                        m.fragments(),
                        List.of(new SegmentHint("norm@0", "s1")));
        assertThat(SourceManifest.decode(hinted.encode())).isEqualTo(hinted);
        assertThat(hinted.digest()).isEqualTo(m.digest()).matches("[0-9a-f]{64}");
        SourceManifest other = Fragmenter.fragment("m", List.of(EMBED, NORM, SCALE), 8192);
        assertThat(other.digest()).isNotEqualTo(m.digest());
    }

    @Test
    void fragmentsThatDoNotTileATensorAreRejectedNamingIt() {
        StoredFragment half = new StoredFragment("n@0", "norm", Shape.of(0), Shape.of(32), 32 * 4);
        assertThatThrownBy(() -> new SourceManifest("m", List.of(NORM), List.of(half)))
                .hasMessageContaining("tensor norm");
        StoredFragment overlapping =
                new StoredFragment("n@1", "norm", Shape.of(16), Shape.of(32), 32 * 4);
        // Same total volume as the tensor, but [16, 32) twice and [48, 64) never.
        assertThatThrownBy(() -> new SourceManifest("m", List.of(NORM), List.of(half, overlapping)))
                .hasMessageContaining("overlap");
        StoredFragment wrongSize = new StoredFragment("n@0", "norm", Shape.of(0), Shape.of(64), 7);
        assertThatThrownBy(() -> new SourceManifest("m", List.of(NORM), List.of(wrongSize)))
                .hasMessageContaining("tensor norm");
    }

    @Test
    void safetensorsHeaderFollowsTheManifestAlone() {
        SourceManifest m = Fragmenter.fragment("m", List.of(EMBED, NORM, SCALE), 4096);
        SafetensorsLayout layout = SafetensorsLayout.of(m);
        byte[] header = layout.headerBytes();
        long length = 0;
        for (int i = 7; i >= 0; i--) {
            length = (length << 8) | (header[i] & 0xFF);
        }
        String json = new String(header, 8, (int) length, StandardCharsets.UTF_8);
        assertThat(length % 8).isZero();
        assertThat(layout.dataStart()).isEqualTo(8 + length);
        assertThat(json.trim())
                .isEqualTo(
                        "{\"__metadata__\":{\"format\":\"pt\"},"
                                + "\"embed\":{\"dtype\":\"BF16\",\"shape\":[1000,64],"
                                + "\"data_offsets\":[0,128000]},"
                                + "\"norm\":{\"dtype\":\"F32\",\"shape\":[64],"
                                + "\"data_offsets\":[128000,128256]},"
                                + "\"scale\":{\"dtype\":\"F32\",\"shape\":[],"
                                + "\"data_offsets\":[128256,128260]}}");
        assertThat(layout.tensorOffsets())
                .containsExactly(
                        layout.dataStart(),
                        layout.dataStart() + 128000,
                        layout.dataStart() + 128256);
        assertThat(layout.imageBytes()).isEqualTo(layout.dataStart() + 128260);
        assertThat(SafetensorsLayout.of(m)).isEqualTo(layout);
    }
}
