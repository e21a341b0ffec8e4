package io.weightrelay.publisher.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.service.problem.RelayException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.util.unit.DataSize;

class StagingAreaTest {

    private final Path path = Path.of("/dev/shm", "wr-test-staging-" + UUID.randomUUID());
    private StagingArea staging;

    private StagingArea open(Clock clock) {
        staging =
                StagingArea.fileOnly(
                        new StagingProperties(
                                StagingArea.Mode.FILE,
                                path,
                                DataSize.ofKilobytes(64),
                                DataSize.ofKilobytes(32),
                                Duration.ofMillis(1500),
                                Duration.ofMinutes(1)),
                        clock);
        return staging;
    }

    @AfterEach
    void close() {
        if (staging != null) {
            staging.close();
        }
    }

    @Test
    void reservesAlignedRegionsAndPushesBackWhenFull() {
        StagingArea area = open(Clock.systemUTC());
        assertThat(Files.exists(path)).isTrue();
        StagingArea.Reservation a = area.reserve(30_000);
        StagingArea.Reservation b = area.reserve(30_000);
        assertThat(a.size()).isEqualTo(30_016);
        assertThat(b.offset()).isEqualTo(30_016);

        assertThatThrownBy(() -> area.reserve(10_000))
                .isInstanceOfSatisfying(
                        RelayException.class,
                        e -> {
                            assertThat(e.kind()).isEqualTo(StagingProblems.STAGING_FULL);
                            assertThat(e.getStatusCode().value()).isEqualTo(429);
                            assertThat(e.getHeaders().getFirst("Retry-After")).isEqualTo("1");
                            assertThat(e.getHeaders().getFirst("Retry-After-Ms")).isEqualTo("1500");
                        });
        assertThatThrownBy(() -> area.reserve(40_000))
                .isInstanceOfSatisfying(
                        RelayException.class,
                        e -> assertThat(e.kind()).isEqualTo(StagingProblems.BATCH_TOO_LARGE));

        area.release(a.id());
        area.free(area.claim(b.id()));
        assertThat(area.freeBytes()).isEqualTo(area.capacity());
        // Freed neighbours coalesce: the whole batch bound fits at offset 0 again.
        assertThat(area.reserve(32 * 1024).offset()).isZero();
    }

    @Test
    void aClaimedReservationCannotBeClaimedOrReleasedTwice() {
        StagingArea area = open(Clock.systemUTC());
        StagingArea.Reservation r = area.reserve(100);
        StagingArea.Reservation claimed = area.claim(r.id());
        assertThatThrownBy(() -> area.claim(r.id()))
                .isInstanceOfSatisfying(
                        RelayException.class,
                        e -> assertThat(e.kind()).isEqualTo(StagingProblems.RESERVATION_BUSY));
        assertThatThrownBy(() -> area.release(r.id()))
                .isInstanceOfSatisfying(
                        RelayException.class,
                        e -> assertThat(e.kind()).isEqualTo(StagingProblems.RESERVATION_BUSY));
        area.free(claimed);
        area.free(claimed);
        assertThatThrownBy(() -> area.claim(r.id()))
                .isInstanceOfSatisfying(
                        RelayException.class,
                        e -> assertThat(e.kind()).isEqualTo(StagingProblems.RESERVATION_NOT_FOUND));
    }

    @Test
    void reclaimsReservationsOfRanksThatVanished() {
        MutableClock clock = new MutableClock();
        StagingArea area = open(clock);
        area.reserve(32 * 1024);
        area.reserve(32 * 1024);
        clock.now = clock.now.plus(Duration.ofMinutes(2));
        assertThat(area.reserve(32 * 1024).offset()).isZero();
        assertThat(area.reservationCount()).isEqualTo(1);
    }

    private static final class MutableClock extends Clock {
        Instant now = Instant.parse("2026-01-01T00:00:00Z");

        @Override
        public ZoneOffset getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
