package io.weightrelay.publisher.publish;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.publisher.client.model.PublishState;
import io.weightrelay.api.publisher.client.model.Reservation;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.trainer.client.PublishFailedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The publish path with a staging file of its own: every fragment is copied once from staging into
 * the segment by a put, which fails when no segment has room.
 */
@PublishEndToEndTest.Staging(mode = "file", segmentSize = "28MB")
class FileStagingPublishTest extends PublishEndToEndTest {

    @Test
    void aGenerationWithAFailedPutIsAbortedAndNeverCommitted() {
        SourceManifest good = tinyFp32ToBf16("e2e-fail");
        long active = publish(good, 0).generation();

        // Larger than the free space of the only segment: some put finds no room anywhere.
        List<TensorSpec> tensors = new ArrayList<>(good.tensors());
        tensors.add(new TensorSpec("huge.weight", Shape.of(4096, 4096), DType.F32, DType.BF16));
        SourceManifest tooBig = Fragmenter.fragment(good.model(), tensors, 64 << 10);

        PublishFailedException e = publishFails(tooBig, 1);
        assertThat(e.getMessage()).contains("aborted").contains("store-failed");
        long failed = e.generation();
        assertThat(state(good.model(), failed)).isEqualTo(GenerationState.ABORTED);
        assertThat(publisher.status(new GenerationId(good.model(), failed)).getState())
                .isEqualTo(PublishState.FAILED);
        assertNoneStored(tooBig, failed);
        assertThat(state(good.model(), active)).isEqualTo(GenerationState.ACTIVE);
        assertThat(controlApi.generations().getActiveGeneration(good.model()).getGeneration())
                .isEqualTo(active);
        assertAllStored(good, active);
    }

    /**
     * Staging with room enough but in holes (objects of generations come and go) takes a batch in
     * smaller reservations, down to what the rank's next write needs, instead of refusing it until
     * the rank gives up.
     */
    @Test
    void aFragmentedStagingStillTakesABatchInSmallerReservations() {
        // The staging file (4 MB) as eight half-batch reservations, every other one given back:
        // half of it free, in 512 KB holes.
        List<Reservation> held = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            held.add(publisher.reserve(512 << 10, Duration.ofSeconds(5)));
        }
        try {
            for (int i = 0; i < held.size(); i += 2) {
                publisher.release(held.get(i).getReservationId());
            }
            assertThatThrownBy(() -> publisher.reserve(1 << 20, Duration.ofMillis(300)))
                    .hasMessageContaining("reserve 1048576 bytes")
                    .hasMessageContaining("429");

            Reservation smaller = publisher.reserve(1 << 20, 256 << 10, Duration.ofSeconds(5));
            assertThat(smaller.getSize()).isBetween(256L << 10, 512L << 10);
            publisher.release(smaller.getReservationId());

            // Not below what the next write needs: then it waits as before, and names the size.
            assertThatThrownBy(() -> publisher.reserve(1 << 20, 768 << 10, Duration.ofMillis(300)))
                    .hasMessageContaining("reserve 786432 bytes (of 1048576 wanted)")
                    .hasMessageContaining("429");
        } finally {
            for (int i = 1; i < held.size(); i += 2) {
                publisher.release(held.get(i).getReservationId());
            }
        }
    }
}
