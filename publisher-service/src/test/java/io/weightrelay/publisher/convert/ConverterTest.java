package io.weightrelay.publisher.convert;

import static org.assertj.core.api.Assertions.assertThat;

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
