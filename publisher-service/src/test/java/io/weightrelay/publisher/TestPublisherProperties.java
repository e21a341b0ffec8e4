package io.weightrelay.publisher;

import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.util.UUID;
import org.springframework.test.context.DynamicPropertyRegistry;

/** Small, private settings for a publisher under test: its own key prefix, segment and staging. */
public final class TestPublisherProperties {

    /** The trainer-role token every test publisher accepts. */
    public static final String TRAINER_TOKEN = "test-trainer-token-0123456789";

    /** The operator-role token every test publisher accepts. */
    public static final String OPERATOR_TOKEN = "test-operator-token-0123456789";

    /**
     * The owner-role token (what control-api presents for checkpoints) every test publisher
     * accepts.
     */
    public static final String OWNER_TOKEN = "test-owner-token-0123456789";

    /** A Prometheus server's: it reads {@code /actuator/prometheus} and nothing else. */
    public static final String METRICS_TOKEN = "test-metrics-token-0123456789";

    /** The owner-role token a test publisher registers its segment with at the test control-api. */
    public static final String SEGMENT_OWNER_TOKEN = "test-segment-owner-token-0123456789";

    private TestPublisherProperties() {}

    /**
     * Registers the settings; returns the data-plane key prefix the test's objects live under. Its
     * keys are deleted at exit, after Spring's cached contexts (this one among them) have closed.
     */
    public static String register(DynamicPropertyRegistry registry, String test, String node) {
        String prefix = RedisTestSupport.uniqueKeyPrefix(test);
        RedisTestSupport.deleteKeysAtShutdown(prefix);
        registerUnder(registry, prefix, node);
        return prefix;
    }

    /**
     * Registers the settings with a data-plane key prefix chosen by the test, for a publisher that
     * shares its data plane with a control-api started before it ({@link TestControlApi}).
     */
    public static void registerUnder(DynamicPropertyRegistry registry, String prefix, String node) {
        registerUnder(registry, prefix, node, "segment", "16MB");
    }

    /**
     * As {@link #registerUnder(DynamicPropertyRegistry, String, String)}, with the staging mode
     * ({@code segment} or {@code file}) and the segment's size.
     */
    public static void registerUnder(
            DynamicPropertyRegistry registry,
            String prefix,
            String node,
            String stagingMode,
            String segmentSize) {
        String id = UUID.randomUUID().toString().substring(0, 8);
        RedisTestSupport.register(registry);
        registry.add("relay.dataplane.redis-uri", () -> RedisTestSupport.endpoint().uri());
        registry.add("relay.dataplane.key-prefix", () -> prefix);
        registry.add("relay.dataplane.secret", () -> TestDataplane.SECRET);
        registry.add("relay.segment.node", () -> node);
        registry.add("relay.segment.name", () -> "publisher-" + node + "-" + id);
        registry.add("relay.segment.size", () -> segmentSize);
        registry.add("relay.staging.mode", () -> stagingMode);
        registry.add("relay.staging.path", () -> "/dev/shm/wr-test-staging-" + id);
        registry.add("relay.staging.capacity", () -> "4MB");
        registry.add("relay.staging.max-batch-bytes", () -> "1MB");
        registry.add("relay.publish.worker-threads", () -> "2");
        registry.add("relay.segment.register", () -> "false");
        // Several registration calls per batch, so the chunked path runs in every test.
        registry.add("relay.publish.register-chunk", () -> "4");
        registry.add("relay.security.tokens.trainer[0]", () -> TRAINER_TOKEN);
        registry.add("relay.security.tokens.operator[0]", () -> OPERATOR_TOKEN);
        registry.add("relay.security.tokens.owner[0]", () -> OWNER_TOKEN);
        registry.add("relay.security.tokens.metrics[0]", () -> METRICS_TOKEN);
    }
}
