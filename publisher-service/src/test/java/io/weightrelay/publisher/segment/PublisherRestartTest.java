package io.weightrelay.publisher.segment;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.publisher.TestControlApi;
import io.weightrelay.publisher.TestPublisherProperties;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.testkit.redis.RedisTestSupport;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.testkit.sim.SimulatedModel;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.TrainerSession;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A publisher killed after a commit and restarted on the same segment never lets a reader get bytes
 * it did not publish: the restarted owner starts a new segment (empty allocator), purges the
 * directory entries its previous incarnation left before it allocates anything, so those
 * generations are unreadable (a loader's prepare refuses missing objects and stays on the
 * generation it serves), and what it publishes next, into the same offsets, verifies byte for byte.
 *
 * <p>Real processes: control-api from its jar and the publisher as a child JVM from this module's
 * classes (killed with SIGKILL, as a crash would), a reader engine of another node in this JVM.
 */
class PublisherRestartTest {

    private static final String NODE = "node-restart";
    private static final long SEED = 7;
    private static final long MAX_FRAGMENT = 64 << 10;

    private final String prefix = RedisTestSupport.uniqueKeyPrefix("publisher-restart");
    private final String segment = "restart-" + UUID.randomUUID().toString().substring(0, 8);
    private TestControlApi control;
    private ServiceProcess publisher;
    private Dataplane reader;

    @BeforeEach
    void start() {
        control = TestControlApi.start("publisher-restart", prefix);
        reader = openReader();
    }

    private Dataplane openReader() {
        return TestDataplane.open("reader-node", prefix);
    }

    @AfterEach
    void stop() throws Exception {
        SegmentPublishers.stop(prefix, publisher, reader, control);
    }

    @Test
    void aRestartedPublisherPurgesWhatItsKilledPredecessorStoredAndNeverServesItsNewBytesAsOld()
            throws Exception {
        SourceManifest manifest =
                Fragmenter.fragment(
                        "restart",
                        SimulatedModel.manifest("tiny", DType.F32, DType.BF16, MAX_FRAGMENT)
                                .tensors(),
                        MAX_FRAGMENT);

        publisher = startPublisher("a");
        long first = publish(manifest, 0);
        // Where the killed owner stored anything: generation 1 (which control-api may collect,
        // or not yet, before generation 2 is stored) and generation 2.
        Map<String, ObjectLocation> before = new java.util.HashMap<>(verifyAll(manifest, first));
        long second = publish(manifest, 1);
        assertThat(control.generations().getActiveGeneration("restart").getGeneration())
                .isEqualTo(second);
        before.putAll(verifyAll(manifest, second));

        publisher.kill();
        publisher = startPublisher("b");
        // A reader that starts now (a new or restarted loader) looks the segment up afresh; one
        // that lived through the restart still holds the killed engine's endpoint (port 0 picked
        // another one) and would see PEER_GONE, never wrong bytes.
        reader.close();
        reader = openReader();

        // Everything the killed owner stored is out of the directory before the new one allocates:
        // no reader can be handed bytes of the new segment under an old key.
        for (long g : List.of(first, second)) {
            for (StoredFragment f : manifest.fragments()) {
                String key = new GenerationId(manifest.model(), g).objectKey(f.fragment());
                assertThat(reader.store().exists(key)).as(key).isFalse();
            }
        }

        // control-api hears of it from the new owner: the generation it still points at is LOST
        // (loaders refuse it and stay on what they serve), never ACTIVE with its bytes gone.
        Generation lost = awaitLost(manifest.model(), second);
        assertThat(lost.getLostReason()).contains(segment).contains("re-created");
        assertThat(control.generations().getActiveGeneration("restart").getGeneration())
                .isEqualTo(second);
        assertThat(control.generations().getActiveGeneration("restart").getState())
                .isEqualTo(GenerationState.LOST);
        if (stillRecorded(manifest.model(), first)) { // not collected before the kill
            assertThat(awaitLost(manifest.model(), first).getState())
                    .isEqualTo(GenerationState.LOST);
        }

        long third = publish(manifest, 2);
        assertThat(control.generations().getActiveGeneration("restart").getState())
                .isEqualTo(GenerationState.ACTIVE);
        Map<String, ObjectLocation> after = verifyAll(manifest, third);
        // The new generation reuses the old offsets: had the old entries stayed, they would
        // now point at generation 3's bytes.
        assertThat(overlaps(before, after)).isTrue();
        for (StoredFragment f : manifest.fragments()) {
            String key = new GenerationId(manifest.model(), second).objectKey(f.fragment());
            assertThat(reader.store().exists(key)).as(key).isFalse();
        }
    }

    private boolean stillRecorded(String model, long generation) {
        try {
            control.generations().getGeneration(model, generation);
            return true;
        } catch (org.springframework.web.client.HttpClientErrorException.NotFound e) {
            return false;
        }
    }

    private Generation awaitLost(String model, long generation) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            Generation g = control.generations().getGeneration(model, generation);
            if (g.getState() == GenerationState.LOST || System.nanoTime() > deadline) {
                assertThat(g.getState())
                        .as(model + "/" + generation)
                        .isEqualTo(GenerationState.LOST);
                return g;
            }
            Thread.sleep(100);
        }
    }

    private ServiceProcess startPublisher(String incarnation) throws InterruptedException {
        return SegmentPublishers.start(
                "publisher-restart-" + incarnation,
                control,
                prefix,
                NODE,
                segment,
                List.of("--relay.segment.register=false"));
    }

    private long publish(SourceManifest manifest, long step) {
        PublisherClient client =
                PublisherClient.connect(
                        publisher.baseUrl(),
                        TestPublisherProperties.TRAINER_TOKEN,
                        Duration.ofSeconds(60));
        TrainerSession session =
                new TrainerSession(
                        control.coordinator(MAX_FRAGMENT),
                        Map.of(NODE, client),
                        RankPublisher.Options.defaults());
        return session.publish(manifest, step, g -> new DeterministicWeights(SEED, g)).generation();
    }

    /** Reads every object of the generation over tcp and checks it against the trainer's bytes. */
    private Map<String, ObjectLocation> verifyAll(SourceManifest manifest, long generation) {
        return SegmentPublishers.verifyAll(
                reader, manifest, generation, segment, SEED, MAX_FRAGMENT);
    }

    private static boolean overlaps(
            Map<String, ObjectLocation> before, Map<String, ObjectLocation> after) {
        for (ObjectLocation a : before.values()) {
            for (ObjectLocation b : after.values()) {
                if (a.offset() < b.offset() + b.size() && b.offset() < a.offset() + a.size()) {
                    return true;
                }
            }
        }
        return false;
    }
}
