package io.weightrelay.publisher.segment;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.publisher.client.model.SegmentInfo;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ObjectLocation;
import io.weightrelay.publisher.TestControlApi;
import io.weightrelay.publisher.TestPublisherProperties;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.testkit.redis.RedisTestSupport;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.testkit.sim.SimulatedModel;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import io.weightrelay.trainer.client.TrainerSession;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * After control-api's Redis lost its data, a publisher frees the segment memory of the generations
 * it published and control-api no longer knows (their directory entries went with Redis, so nobody
 * else can free them); it frees nothing while control-api does not answer, and nothing beyond what
 * a normal collection frees.
 *
 * <p>Real processes: control-api from its jar and the publisher as a child JVM from this module's
 * classes, heartbeating every {@value #BEAT_MS} ms; a reader engine of another node in this JVM.
 * Redis losing its data is played by deleting every key of control-api's prefix and of the
 * data-plane prefix while both services run.
 */
class ForgottenGenerationsTest {

    private static final String NODE = "node-forgotten";
    private static final String MODEL = "forgotten";
    private static final long SEED = 11;
    private static final long MAX_FRAGMENT = 64 << 10;
    private static final long BEAT_MS = 300;

    /** Time for a few heartbeats, on a loaded machine. */
    private static final Duration FEW_BEATS = Duration.ofSeconds(20);

    private static final Pattern RECLAIMED =
            Pattern.compile(
                    "(?m)^relay_publisher_segment_reclaimed_bytes_total(\\{[^}]*})? ([0-9.eE+]+)$");

    private final String prefix = RedisTestSupport.uniqueKeyPrefix("forgotten");
    private final String segment = "forgotten-" + UUID.randomUUID().toString().substring(0, 8);
    private final SourceManifest manifest =
            Fragmenter.fragment(
                    MODEL,
                    SimulatedModel.manifest("tiny", DType.F32, DType.BF16, MAX_FRAGMENT).tensors(),
                    MAX_FRAGMENT);
    private TestControlApi control;
    private ServiceProcess publisher;
    private Dataplane reader;

    /**
     * One trainer coordinator for the test, as a trainer keeps it: it sends the newest generation
     * it was given with each open, so ids continue above it after Redis lost its data.
     */
    private RestCoordinator coordinator;

    @BeforeEach
    void start() throws InterruptedException {
        control = TestControlApi.start("forgotten", prefix);
        reader = TestDataplane.open("reader-node", prefix);
        publisher = startPublisher();
    }

    @AfterEach
    void stop() throws Exception {
        SegmentPublishers.stop(prefix, publisher, reader, control);
    }

    @Test
    void aPublisherFreesTheMemoryOfGenerationsRedisForgot() throws Exception {
        long first = publish(0);
        long second = publish(1);
        verifyAll(second);
        long used = segment().getUsed();
        assertThat(used).as("bytes of generations %d and %d", first, second).isPositive();
        assertThat(reclaimed()).isZero();

        control.loseData();
        RedisTestSupport.deleteKeys(prefix); // the store's directory went with Redis

        SegmentInfo after = awaitUsed(0, FEW_BEATS);
        assertThat(after.getUsed())
                .as(
                        "segment bytes still allocated %s after Redis lost generations %d and %d"
                                + " (%d bytes before)",
                        FEW_BEATS, first, second, used)
                .isZero();
        assertThat(reclaimed()).as("relay.publisher.segment.reclaimed").isEqualTo(used);

        // The segment serves what is published after the loss, and keeps it.
        long next = publish(2);
        Map<String, ObjectLocation> stored = verifyAll(next);
        long usedNext = segment().getUsed();
        assertThat(usedNext).isPositive();
        Thread.sleep(10 * BEAT_MS);
        assertThat(segment().getUsed()).isEqualTo(usedNext);
        assertThat(verifyAll(next)).isEqualTo(stored);
        assertThat(reclaimed()).isEqualTo(used);
    }

    @Test
    void nothingIsFreedWhileControlApiDoesNotAnswer() throws Exception {
        long generation = publish(0);
        long used = segment().getUsed();
        assertThat(used).isPositive();

        control.kill();
        control.loseData();
        RedisTestSupport.deleteKeys(prefix);

        // Whether Redis lost anything is control-api's word: without it, nothing is freed.
        Thread.sleep(15 * BEAT_MS);
        assertThat(segment().getUsed())
                .as("bytes of generation %d while control-api is away", generation)
                .isEqualTo(used);
        assertThat(reclaimed()).isZero();
    }

    @Test
    void aNormalCollectionFreesNothingMore() throws Exception {
        publish(0);
        publish(1);
        long active = publish(2);
        long before = segment().getUsed();
        int collected = control.generations().collectGarbage(MODEL).getCollected().size();
        assertThat(collected).as("retired generations collected").isPositive();
        long afterCollection = segment().getUsed();
        assertThat(afterCollection).isLessThan(before);
        Map<String, ObjectLocation> stored = verifyAll(active);

        Thread.sleep(15 * BEAT_MS);
        assertThat(segment().getUsed()).isEqualTo(afterCollection);
        assertThat(verifyAll(active)).isEqualTo(stored);
        assertThat(reclaimed()).isZero();
    }

    private SegmentInfo awaitUsed(long bytes, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        SegmentInfo info = segment();
        while (info.getUsed() != bytes && System.nanoTime() < deadline) {
            Thread.sleep(100);
            info = segment();
        }
        return info;
    }

    private SegmentInfo segment() {
        return client().segment();
    }

    /** {@code relay.publisher.segment.reclaimed} as scraped, in bytes (0 when never counted). */
    private long reclaimed() throws Exception {
        HttpResponse<String> scrape =
                HttpClient.newHttpClient()
                        .send(
                                HttpRequest.newBuilder(
                                                URI.create(
                                                        publisher.baseUrl()
                                                                + "/actuator/prometheus"))
                                        .header(
                                                "Authorization",
                                                "Bearer " + TestPublisherProperties.METRICS_TOKEN)
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
        assertThat(scrape.statusCode()).as(scrape.body()).isEqualTo(200);
        Matcher m = RECLAIMED.matcher(scrape.body());
        return m.find() ? (long) Double.parseDouble(m.group(2)) : 0;
    }

    private PublisherClient client() {
        return PublisherClient.connect(
                publisher.baseUrl(), TestPublisherProperties.TRAINER_TOKEN, Duration.ofSeconds(60));
    }

    private ServiceProcess startPublisher() throws InterruptedException {
        return SegmentPublishers.start(
                "publisher-forgotten",
                control,
                prefix,
                NODE,
                segment,
                List.of(
                        "--relay.segment.heartbeat=" + BEAT_MS + "ms",
                        "--relay.publish.control-api-timeout=2s",
                        "--relay.security.tokens.metrics[0]="
                                + TestPublisherProperties.METRICS_TOKEN));
    }

    private long publish(long step) {
        if (coordinator == null) {
            coordinator = control.coordinator(MAX_FRAGMENT);
        }
        TrainerSession session =
                new TrainerSession(
                        coordinator, Map.of(NODE, client()), RankPublisher.Options.defaults());
        return session.publish(manifest, step, g -> new DeterministicWeights(SEED, g)).generation();
    }

    /** Reads every object of the generation over tcp and checks it against the trainer's bytes. */
    private Map<String, ObjectLocation> verifyAll(long generation) {
        return SegmentPublishers.verifyAll(
                reader, manifest, generation, segment, SEED, MAX_FRAGMENT);
    }
}
