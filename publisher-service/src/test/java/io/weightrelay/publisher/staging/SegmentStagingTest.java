package io.weightrelay.publisher.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.dataplane.ObjectExistsException;
import io.weightrelay.dataplane.StoreClient;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.segment.SegmentProperties;
import io.weightrelay.service.dataplane.DataplaneProperties;
import io.weightrelay.service.dataplane.DataplaneSettings;
import io.weightrelay.service.problem.RelayException;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.LongFunction;
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

    /**
     * A segment holds the active generation while the next is published, then the older one is
     * collected. Each generation's batches are stored as objects with gaps between them (what
     * alignment and narrowing conversions leave). With every reservation at the low end, the third
     * generation already finds no contiguous batch with a third of the segment free; with
     * generations at alternate ends ({@link StagingArea#end}), sixty generations all fit and leave
     * the segment whole.
     */
    @Test
    void generationsAtAlternateEndsNeverFragmentTheSegment() {
        assertThat(publishGenerations(g -> StoreClient.End.LOW, 60)).isEqualTo(2);
        assertThat(owner.freeBytes()).isEqualTo(8 * MIB);

        assertThat(publishGenerations(StagingArea::end, 60)).isEqualTo(-1);
        assertThat(owner.freeBytes()).isEqualTo(8 * MIB);
        long whole = owner.reserve(8 * MIB); // one hole again
        assertThat(whole).isZero();
        owner.releaseReservation(whole);
    }

    /**
     * Publishes {@code generations} generations of two 2 MiB batches, each stored as two objects
     * with a gap between them, collecting each generation once the next is stored; answers the
     * first generation a batch found no room for (-1: none), having removed every object.
     */
    private long publishGenerations(LongFunction<StoreClient.End> ends, int generations) {
        List<List<String>> live = List.of(new ArrayList<>(), new ArrayList<>());
        long failed = -1;
        for (long g = 0; g < generations && failed < 0; g++) {
            List<String> mine = live.get((int) (g % 2));
            for (int b = 0; b < 2; b++) {
                StagingArea.Reservation r;
                try {
                    r = staging.reserve(2 * MIB, ends.apply(g));
                } catch (RelayException e) {
                    assertThat(e.kind()).isEqualTo(StagingProblems.STAGING_FULL);
                    failed = g;
                    break;
                }
                String first = "m/" + g + "/b" + b + "-0";
                String second = "m/" + g + "/b" + b + "-1";
                staging.store(
                        staging.claim(r.id()),
                        List.of(
                                new StagingArea.Piece(first, r.offset(), 384 * 1024 + g),
                                new StagingArea.Piece(second, r.offset() + MIB, 640 * 1024 - g)),
                        Runnable::run);
                mine.add(first);
                mine.add(second);
            }
            if (g > 0) {
                List<String> before = live.get((int) ((g + 1) % 2));
                before.forEach(owner::remove);
                before.clear();
            }
        }
        live.forEach(keys -> keys.forEach(owner::remove));
        return failed;
    }

    private static byte[] pattern(long size, int seed) {
        byte[] b = new byte[(int) size];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }
}
