package io.weightrelay.publisher.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.dataplane.ObjectExistsException;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.segment.SegmentProperties;
import io.weightrelay.service.dataplane.DataplaneProperties;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.problem.RelayException;
import io.weightrelay.service.test.RedisTestSupport;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.util.unit.DataSize;

/**
 * Staging inside the store segment against a real data plane (segment in {@code /dev/shm},
 * directory in Redis): what a rank writes through the segment's file is what gets stored, with no
 * copy, and the segment's space is accounted for exactly.
 */
class SegmentStagingTest {

    private static final long MIB = 1 << 20;

    private final String prefix = RedisTestSupport.uniqueKeyPrefix("segment-staging");
    private SegmentOwner owner;
    private StagingArea staging;

    @BeforeEach
    void open() {
        String id = UUID.randomUUID().toString().substring(0, 8);
        owner =
                new SegmentOwner(
                        new SegmentProperties(
                                "node-staging",
                                "staging-" + id,
                                DataSize.ofMegabytes(8),
                                false,
                                null,
                                Duration.ofSeconds(5),
                                SegmentProperties.TRAINER),
                        new DataplaneSettings(
                                DataplaneProperties.loopback(
                                        RedisTestSupport.endpoint().uri(), prefix)));
        staging =
                new StagingArea(
                        new StagingProperties(
                                StagingArea.Mode.SEGMENT,
                                Path.of("/dev/shm/unused-" + id),
                                DataSize.ofMegabytes(6),
                                DataSize.ofMegabytes(4),
                                Duration.ofMillis(100),
                                Duration.ofMinutes(1)),
                        owner);
    }

    @AfterEach
    void close() {
        staging.close();
        owner.close();
        RedisTestSupport.deleteKeys(prefix);
    }

    @Test
    void whatARankWritesThroughTheSegmentFileIsStoredWithoutACopy() throws Exception {
        assertThat(staging.mode()).isEqualTo(StagingArea.Mode.SEGMENT);
        assertThat(staging.path()).isEqualTo(owner.shmPath());
        assertThat(staging.fileSize()).isEqualTo(8 * MIB);
        StagingArea.Reservation r = staging.reserve(3 * MIB);
        assertThat(owner.freeBytes()).isEqualTo(5 * MIB);

        // The rank's side: its own mapping of the segment's file.
        byte[] first = pattern(MIB, 1);
        byte[] second = pattern(MIB / 2, 2);
        try (FileChannel file =
                FileChannel.open(
                        staging.path(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            var mapped = file.map(FileChannel.MapMode.READ_WRITE, r.offset(), r.size());
            mapped.put(0, first);
            mapped.put(2 * (int) MIB, second);
        }
        var countersBefore = owner.counters();
        staging.store(
                staging.claim(r.id()),
                List.of(
                        new StagingArea.Piece("m/1/a", r.offset(), MIB),
                        new StagingArea.Piece("m/1/b", r.offset() + 2 * MIB, MIB / 2)),
                Runnable::run);
        staging.free(r); // a no-op: the reservation became the objects

        var moved = owner.counters().minus(countersBefore);
        assertThat(moved.localWritten() + moved.tcpWritten()).isZero();
        assertThat(Checksums.crc32c(owner.ownedBytes("m/1/a").orElseThrow()))
                .isEqualTo(Checksums.crc32c(ByteBuffer.wrap(first)));
        assertThat(Checksums.crc32c(owner.ownedBytes("m/1/b").orElseThrow()))
                .isEqualTo(Checksums.crc32c(ByteBuffer.wrap(second)));
        // The gap between the objects went back to the segment, the objects hold the rest.
        assertThat(owner.freeBytes()).isEqualTo(8 * MIB - MIB - MIB / 2);
        assertThat(staging.reservationCount()).isZero();
        owner.remove("m/1/a");
        owner.remove("m/1/b");
        assertThat(owner.freeBytes()).isEqualTo(8 * MIB);
    }

    @Test
    void aFullSegmentPushesBackAndAFailedStoreGivesEverythingBack() {
        StagingArea.Reservation a = staging.reserve(4 * MIB);
        // Within the staging cap, but the segment has only 4 MiB left: back-pressure, not a hang.
        staging.reserve(2 * MIB);
        assertThatThrownBy(() -> staging.reserve(MIB))
                .isInstanceOfSatisfying(
                        RelayException.class,
                        e -> assertThat(e.kind()).isEqualTo(StagingProblems.STAGING_FULL));
        staging.close(); // frees what is still reserved
        assertThat(owner.freeBytes()).isEqualTo(8 * MIB);

        staging =
                new StagingArea(
                        new StagingProperties(
                                StagingArea.Mode.SEGMENT,
                                Path.of("/dev/shm/unused"),
                                DataSize.ofMegabytes(16),
                                DataSize.ofMegabytes(4),
                                Duration.ofMillis(100),
                                Duration.ofMinutes(1)),
                        owner);
        StagingArea.Reservation taken = staging.reserve(MIB);
        staging.store(
                staging.claim(taken.id()),
                List.of(new StagingArea.Piece("m/2/x", taken.offset(), 4096)),
                Runnable::run);
        StagingArea.Reservation clash = staging.reserve(2 * MIB);
        assertThatThrownBy(
                        () ->
                                staging.store(
                                        staging.claim(clash.id()),
                                        List.of(
                                                new StagingArea.Piece(
                                                        "m/2/y", clash.offset(), 4096),
                                                new StagingArea.Piece(
                                                        "m/2/x", clash.offset() + MIB, 4096)),
                                        Runnable::run))
                .isInstanceOf(ObjectExistsException.class);
        staging.free(clash);
        assertThat(owner.exists("m/2/y")).isFalse();
        assertThat(owner.freeBytes()).isEqualTo(8 * MIB - 4096);
        owner.remove("m/2/x");
        assertThat(a.size()).isEqualTo(4 * MIB);
    }

    private static byte[] pattern(long size, int seed) {
        byte[] b = new byte[(int) size];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }
}
