package io.weightrelay.control;

import io.weightrelay.service.test.RedisTestSupport;
import io.weightrelay.service.test.TestDataplane;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The whole service on a loopback port against the test Redis. Every test class extending this
 * shares one context (and one key prefix per run); tests keep apart by model name.
 */
@ControlApiTestProperties
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "relay.security.tokens.owner[0]=" + ControlApiClientSupport.OWNER,
            "relay.security.tokens.metrics[0]=" + ControlApiClientSupport.METRICS,
            "relay.security.bound[0].role=owner",
            "relay.security.bound[0].identity=" + ControlApiClientSupport.BOUND_SEGMENT,
            "relay.security.bound[0].token=" + ControlApiClientSupport.OWNER_BOUND,
            "relay.security.bound[1].role=loader",
            "relay.security.bound[1].identity=" + ControlApiClientSupport.BOUND_INSTANCE,
            "relay.security.bound[1].token=" + ControlApiClientSupport.LOADER_BOUND,
            "relay.checkpoints.owner-token=" + ControlApiClientSupport.OWNER_CALL,
            "relay.generations.max-objects=1000",
            "relay.registry.segment-ttl=2s",
            "relay.registry.loader-ttl=60s",
            "relay.registry.heartbeat-ages-interval=300ms",
            "relay.limits.max-request-bytes=1048576"
        })
public abstract class ControlApiTestSupport extends ControlApiClientSupport {

    /** One prefix per test run: the store's directory lives under it too. */
    public static final String PREFIX = RedisTestSupport.uniqueKeyPrefix("control-api");

    public static final String STORE_PREFIX = PREFIX + "dp:";

    static {
        // The context is cached for the whole run and closed only at exit; delete after that.
        RedisTestSupport.deleteKeysAtShutdown(PREFIX);
    }

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        RedisTestSupport.register(registry);
        registry.add("relay.redis.key-prefix", () -> PREFIX);
        registry.add("relay.dataplane.key-prefix", () -> STORE_PREFIX);
        registry.add("relay.dataplane.secret", () -> TestDataplane.SECRET);
        registry.add("relay.dataplane.redis-uri", () -> RedisTestSupport.endpoint().uri());
        // Checkpoints go under the tests' temporary directory (the module's target/test-tmp).
        registry.add("relay.checkpoints.root", () -> System.getProperty("java.io.tmpdir"));
    }
}
