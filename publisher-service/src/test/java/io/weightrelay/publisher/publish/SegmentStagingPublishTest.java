package io.weightrelay.publisher.publish;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.publisher.client.model.PublishState;
import io.weightrelay.dataplane.InPlaceObject;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.trainer.client.PublishFailedException;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RelayCallException;
import io.weightrelay.trainer.client.TrainerSession;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The publish path with staging inside the store segment (the default): ranks write where the
 * objects live, so storing copies nothing; a store that fails (here: a stale object already
 * published under one of the generation's keys) fails the generation, which is aborted while the
 * previous one stays active, and every byte reserved for it goes back to the segment. The segment
 * has room for the tests' active generations plus staging, which lives in it.
 */
@PublishEndToEndTest.Staging(mode = "segment", segmentSize = "48MB")
class SegmentStagingPublishTest extends PublishEndToEndTest {

    /**
     * An RL loop publishes every step, and nobody collects in between (control-api's scheduled
     * collection runs once a minute; here it does not run at all). Every commit retires the
     * generation before, and a few retired generations of 5 MB fill what the 48 MB segment has
     * left: a reservation of the next one then finds no room. The publisher has control-api collect
     * the retired generations (no lease holds them) and reserves again, so every generation of the
     * loop publishes, each well before the rank's reserve timeout, and the segment holds only the
     * active one of them at the end.
     */
    @Test
    void aLoopThatNeverCollectsKeepsPublishingAsRetiredGenerationsFillTheSegment() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-loop");
        long freeBefore = owner.freeBytes();
        int steps = 2 * (int) (freeBefore / manifest.totalBytes()) + 2;
        TrainerSession loop =
                new TrainerSession(
                        controlApi.coordinator(MAX_FRAGMENT),
                        Map.of(NODE, publisher),
                        new RankPublisher.Options(2, false, Duration.ofSeconds(10)));
        List<Long> published = new ArrayList<>();
        for (int step = 0; step < steps; step++) {
            published.add(
                    loop.publish(manifest, step, g -> new DeterministicWeights(SEED, g))
                            .generation());
        }
        long last = published.get(published.size() - 1);
        assertThat(state(manifest.model(), last)).isEqualTo(GenerationState.ACTIVE);
        assertAllStored(manifest, last);
        // The segment wrapped around: what the loop published adds up to more than it ever had.
        assertThat(steps * manifest.totalBytes()).isGreaterThan(2 * freeBefore);
        // Early generations were collected on the way (their objects and records are gone).
        assertNoneStored(manifest, published.get(0));
        assertThat(controlApi.generations().listGenerations(manifest.model(), null, null, null))
                .extracting(g -> g.getGeneration())
                .doesNotContain(published.get(0));
    }

    @Test
    void aGenerationWithAFailedPutIsAbortedAndNeverCommitted() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-fail");
        long active = publish(manifest, 0).generation();
        long next =
                controlApi.coordinator(MAX_FRAGMENT).open(manifest, List.of(NODE), 1).generation();
        // A stale object under one of the new generation's keys: the in-place publish of the
        // batch holding that fragment finds the key taken.
        StoredFragment victim = manifest.fragments().get(manifest.fragments().size() / 2);
        String stale = new GenerationId(manifest.model(), next).objectKey(victim.fragment());
        long block = owner.reserve(victim.bytes());
        owner.publishInPlace(block, List.of(new InPlaceObject(stale, block, victim.bytes())));
        long freeBefore = owner.freeBytes();

        PublishFailedException failed = publishFails(manifest, 1);
        assertThat(failed.generation()).isEqualTo(next);
        assertThat(failed.getMessage())
                .contains("aborted")
                .contains("store-failed")
                .contains(stale);
        assertThat(state(manifest.model(), next)).isEqualTo(GenerationState.ABORTED);
        assertThat(publisher.status(new GenerationId(manifest.model(), next)).getState())
                .isEqualTo(PublishState.FAILED);
        assertNoneStored(manifest, next, stale);
        // A rank still waiting for room learns at once that its generation failed here.
        assertThatThrownBy(
                        () ->
                                publisher.reserve(
                                        new GenerationId(manifest.model(), next),
                                        4096,
                                        Duration.ZERO))
                .isInstanceOfSatisfying(
                        RelayCallException.class,
                        e -> {
                            assertThat(e.status()).isEqualTo(409);
                            assertThat(e.problemType()).isEqualTo("generation-failed");
                        });
        assertThat(state(manifest.model(), active)).isEqualTo(GenerationState.ACTIVE);
        assertThat(controlApi.generations().getActiveGeneration(manifest.model()).getGeneration())
                .isEqualTo(active);
        assertAllStored(manifest, active);
        // No reservation or output block of the failed generation is left behind.
        assertThat(owner.freeBytes()).isGreaterThanOrEqualTo(freeBefore);
    }
}
