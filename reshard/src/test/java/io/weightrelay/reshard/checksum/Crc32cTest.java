package io.weightrelay.reshard.checksum;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

class Crc32cTest {

    @Test
    void theStandardCheckValue() {
        byte[] digits = "123456789".getBytes(StandardCharsets.US_ASCII);
        assertThat(Crc32c.of(digits, 0, digits.length)).isEqualTo(0xe3069283);
        assertThat(Crc32c.format(0xe3069283)).isEqualTo("crc32c:e3069283");
        assertThat(Crc32c.parse("CRC32C:E3069283")).isEqualTo(0xe3069283);
    }

    @Test
    void combiningTwoPartsEqualsTheDirectChecksumAtEverySplit() {
        Random random = new Random(14);
        for (int length : new int[] {0, 1, 2, 3, 7, 8, 63, 64, 65, 1000, 4096, 65_537}) {
            byte[] bytes = new byte[length];
            random.nextBytes(bytes);
            int whole = Crc32c.of(bytes, 0, length);
            int step = Math.max(1, length / 37);
            for (int split = 0; split <= length; split += step) {
                int a = Crc32c.of(bytes, 0, split);
                int b = Crc32c.of(bytes, split, length - split);
                assertThat(Crc32c.combine(a, b, length - split))
                        .as("length %d split at %d", length, split)
                        .isEqualTo(whole);
            }
        }
    }

    @Test
    void combiningManyRangesInOrderEqualsTheDirectChecksum() {
        Random random = new Random(7);
        byte[] bytes = new byte[3 << 20];
        random.nextBytes(bytes);
        int whole = Crc32c.of(ByteBuffer.wrap(bytes));
        for (int trial = 0; trial < 20; trial++) {
            int at = 0;
            int crc = 0;
            while (at < bytes.length) {
                int n = Math.min(bytes.length - at, 1 + random.nextInt(400_000));
                crc = Crc32c.combine(crc, Crc32c.of(bytes, at, n), n);
                at += n;
            }
            assertThat(crc).isEqualTo(whole);
        }
    }

    @Test
    void longZeroRunsMatchTheDirectChecksum() {
        // Lengths with many set bits walk the whole x^(2^k) table.
        for (int n : new int[] {(1 << 20) - 1, (1 << 22) + 12345, 10_000_019}) {
            byte[] zeros = new byte[n];
            int head = Crc32c.of(new byte[] {1, 2, 3}, 0, 3);
            byte[] joined = new byte[n + 3];
            joined[0] = 1;
            joined[1] = 2;
            joined[2] = 3;
            assertThat(Crc32c.combine(head, Crc32c.of(zeros, 0, n), n))
                    .isEqualTo(Crc32c.of(joined, 0, joined.length));
        }
    }

    @Test
    void zeroRunsWithoutTheirBytes() {
        for (int n : new int[] {0, 1, 2, 3, 4095, 4096, 65_537, 3_000_001}) {
            assertThat(Crc32c.zeros(n)).as("%d zeros", n).isEqualTo(Crc32c.of(new byte[n], 0, n));
        }
    }

    @Test
    void combineIsAssociativeBeyondFourGibibytes() {
        // Objects and their ranges are longs: parts of 3 and 5 GiB combine consistently.
        int a = 0x12345678;
        int b = 0x9abcdef0;
        int c = 0x0badf00d;
        long lb = 3L << 30;
        long lc = (5L << 30) + 17;
        int left = Crc32c.combine(Crc32c.combine(a, b, lb), c, lc);
        int right = Crc32c.combine(a, Crc32c.combine(b, c, lc), lb + lc);
        assertThat(left).isEqualTo(right);
        assertThat(Crc32c.combine(a, 0, 0)).isEqualTo(a);
    }

    @Test
    void badInputIsRefusedByName() {
        assertThatThrownBy(() -> Crc32c.parse("md5:abc"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("md5:abc");
        assertThatThrownBy(() -> Crc32c.combine(1, 2, -1))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
