package io.weightrelay.loader.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.checksum.Crc32c;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The sender's tally: a write carried by a summed transfer, and the same bytes sent again to
 * another instance's worker unsummed, as the summed one's twin. The twin's digest must be what
 * summing its own bytes would give, and a twin whose summed transfer never completed, or that
 * carried another length, must leave its write short, never count with a checksum it does not
 * match.
 */
class SentTallyTest {
    private static final byte[] BYTES =
            "the same staging bytes, sent twice".getBytes(StandardCharsets.UTF_8);
    private static final int CRC = Crc32c.of(BYTES, 0, BYTES.length);

    /** The tags of one piece each of two writes of the same bytes: to i1's worker and to i2's. */
    private record Pair(SentTally.Tag summed, SentTally.Tag twin) {}

    private static Pair twoWritesOfTheSameBytes(SentTally tally, long dstOffset) {
        int first = tally.open("i0", "i1", "i1-r0", "model", dstOffset, BYTES.length);
        int second = tally.open("i0", "i2", "i2-r0", "model", dstOffset, BYTES.length);
        return new Pair(tally.tag(first), tally.tag(second));
    }

    @Test
    void aTwinCountsWithItsSummedTransfersChecksum() {
        SentTally tally = new SentTally();
        Pair p = twoWritesOfTheSameBytes(tally, 64);
        SentTally.Tag summed = p.summed();
        SentTally.Tag twin = p.twin();
        tally.add(summed, CRC, BYTES.length);
        tally.twin(twin, summed, BYTES.length);

        Map<String, Map<LandedProof.Key, LandedProof.Digest>> digests = tally.digests();

        LandedProof.Digest expected =
                new LandedProof.Digest(
                        LandedProof.bound("model", 64, CRC, BYTES.length), BYTES.length);
        assertThat(digests.get("i1"))
                .containsEntry(new LandedProof.Key("i0", "i1-r0", "model"), expected);
        assertThat(digests.get("i2"))
                .containsEntry(new LandedProof.Key("i0", "i2-r0", "model"), expected);
    }

    @Test
    void aTwinOfATransferThatNeverCompletedLeavesItsWriteShort() {
        SentTally tally = new SentTally();
        Pair p = twoWritesOfTheSameBytes(tally, 0);
        SentTally.Tag summed = p.summed();
        SentTally.Tag twin = p.twin();
        tally.twin(twin, summed, BYTES.length);

        assertThatThrownBy(tally::digests)
                .isInstanceOf(ApplyFailure.class)
                .hasMessageContaining("cover 0 of its " + BYTES.length + " bytes");
    }

    @Test
    void aTwinOfAnotherLengthDoesNotCount() {
        SentTally tally = new SentTally();
        Pair p = twoWritesOfTheSameBytes(tally, 0);
        SentTally.Tag summed = p.summed();
        SentTally.Tag twin = p.twin();
        tally.add(summed, CRC, BYTES.length);
        tally.twin(twin, summed, BYTES.length - 1);

        assertThatThrownBy(tally::digests)
                .isInstanceOf(ApplyFailure.class)
                .hasMessageContaining("i2-r0");
    }
}
