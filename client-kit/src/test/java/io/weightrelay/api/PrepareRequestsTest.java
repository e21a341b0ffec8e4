package io.weightrelay.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The prepare request loader-service and the lab's control-plane bench send: its bounds. */
class PrepareRequestsTest {

    @Test
    void thePrepareRequestKeepsItsDurationsInTheContractsBounds() {
        var request = PrepareRequests.of("i0", Duration.ofDays(2), Duration.ofMillis(10), "digest");
        assertThat(request.getInstance()).isEqualTo("i0");
        assertThat(request.getLeaseTtlSeconds()).isEqualTo(86400);
        assertThat(request.getPhaseTimeoutSeconds()).isEqualTo(1);
        assertThat(request.getKnownBuffersDigest()).isEqualTo("digest");
        assertThat(PrepareRequests.of("i0", Duration.ofMinutes(10), Duration.ofHours(2), null))
                .satisfies(
                        r -> {
                            assertThat(r.getLeaseTtlSeconds()).isEqualTo(600);
                            assertThat(r.getPhaseTimeoutSeconds()).isEqualTo(3600);
                        });
    }
}
