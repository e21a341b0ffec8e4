package io.weightrelay.publisher.convert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.convert.Floats;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ConverterTest {

    @Test
    void convertsInPlaceAndChecksumsBothSides() {
        int elements = Converter.CHUNK * 3 + 17; // several chunks and a ragged end
        ByteBuffer buffer = ByteBuffer.allocateDirect(64 + elements * 4);
        SplittableRandom random = new SplittableRandom(3);
        int[] source = new int[elements];
        for (int i = 0; i < elements; i++) {
            source[i] = random.nextInt();
            buffer.order(ByteOrder.LITTLE_ENDIAN).putInt(64 + 4 * i, source[i]);
        }
        int sourceCrc = Checksums.crc32c(buffer.slice(64, elements * 4));

        Converter.Result result =
                Converter.convertInPlace(buffer, 64, elements * 4, Conversion.FP32_TO_BF16);

        ByteBuffer expected = ByteBuffer.allocate(elements * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < elements; i++) {
            expected.putShort(Floats.bf16(source[i]));
        }
        expected.flip();
        assertThat(buffer.slice(64, elements * 2)).isEqualTo(expected);
        assertThat(result.outputBytes()).isEqualTo(elements * 2L);
        assertThat(result.sourceCrc()).isEqualTo(sourceCrc);
        assertThat(result.outputCrc()).isEqualTo(Checksums.crc32c(expected));
    }

    @Test
    void fp16AndPassThrough() {
        ByteBuffer buffer = ByteBuffer.allocateDirect(4 * 1000).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 1000; i++) {
            buffer.putFloat(4 * i, i * 0.37f - 100f);
        }
        ByteBuffer copy = ByteBuffer.allocateDirect(buffer.capacity()).put(buffer.duplicate());
        Converter.Result same =
                Converter.convertInPlace(copy, 0, copy.capacity(), Conversion.PASS_THROUGH);
        assertThat(same.outputBytes()).isEqualTo(4000);
        assertThat(same.outputCrc())
                .isEqualTo(same.sourceCrc())
                .isEqualTo(Checksums.crc32c(buffer));

        Converter.convertInPlace(buffer, 0, 4000, Conversion.FP32_TO_FP16);
        for (int i = 0; i < 1000; i++) {
            float want = i * 0.37f - 100f;
            float got = Floats.fromFp16(buffer.getShort(2 * i));
            assertThat(Math.abs(got - want)).isLessThanOrEqualTo(Math.abs(want) * 0x1p-11f + 1e-6f);
        }
    }

    @Test
    void convertingIntoSeparateMemoryGivesTheInPlaceBytesAndLeavesTheSourceAlone() {
        SplittableRandom random = new SplittableRandom(7);
        int elements = 3 * Converter.CHUNK + 5;
        ByteBuffer source = ByteBuffer.allocateDirect(4 * elements).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < elements; i++) {
            source.putInt(4 * i, random.nextInt());
        }
        int sourceCrc = Checksums.crc32c(source.duplicate());
        for (Conversion c : Conversion.values()) {
            if (c.blockScaled()) {
                // BlockFp8Test covers these; Converter refuses them, naming the class that converts
                assertThatThrownBy(
                                () -> Converter.convert(source.duplicate(), source.duplicate(), c))
                        .hasMessageContaining("BlockFp8");
                continue;
            }
            ByteBuffer target = ByteBuffer.allocateDirect(source.capacity() + 64);
            Converter.Result separate = Converter.convert(source.duplicate(), target, c);
            ByteBuffer reference = ByteBuffer.allocateDirect(source.capacity());
            reference.put(source.duplicate()).clear();
            Converter.Result same = Converter.convertInPlace(reference, 0, source.capacity(), c);
            assertThat(separate).as("%s", c).isEqualTo(same);
            assertThat(separate.sourceCrc()).isEqualTo(sourceCrc);
            assertThat(target.slice(0, (int) separate.outputBytes()))
                    .as("%s", c)
                    .isEqualTo(reference.slice(0, (int) same.outputBytes()));
            assertThat(Checksums.crc32c(source.duplicate())).isEqualTo(sourceCrc);
        }
        assertThatThrownBy(
                        () ->
                                Converter.convert(
                                        source.duplicate(),
                                        ByteBuffer.allocateDirect(16),
                                        Conversion.FP32_TO_BF16))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void combineEqualsChecksumOfTheWhole() {
        SplittableRandom random = new SplittableRandom(4);
        byte[] bytes = new byte[100_000];
        random.nextBytes(bytes);
        ByteBuffer all = ByteBuffer.wrap(bytes);
        for (int cut : new int[] {0, 1, 4096, 99_999, 100_000}) {
            int a = Checksums.crc32c(all.slice(0, cut));
            int b = Checksums.crc32c(all.slice(cut, bytes.length - cut));
            assertThat(Checksums.combine(a, b, bytes.length - cut))
                    .as("cut at %d", cut)
                    .isEqualTo(Checksums.crc32c(all));
        }
        assertThat(Checksums.parse(Checksums.format(0xdeadbeef))).isEqualTo(0xdeadbeef);
        assertThat(Checksums.format(0x1a2b)).isEqualTo("crc32c:00001a2b");
    }
}
