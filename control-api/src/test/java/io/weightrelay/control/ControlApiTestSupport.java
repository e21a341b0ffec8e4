package io.weightrelay.control;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.service.test.RedisTestSupport;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The whole service on a loopback port against the test Redis. Every test class extending this
 * shares one context (and one key prefix per run); tests keep apart by model name.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "relay.security.tokens.trainer[0]=" + ControlApiClientSupport.TRAINER,
            "relay.security.tokens.loader[0]=" + ControlApiClientSupport.LOADER,
            "relay.security.tokens.operator[0]=" + ControlApiClientSupport.OPERATOR,
            "relay.generations.scheduled-gc=false",
            "relay.generations.max-objects=1000",
            "relay.registry.segment-ttl=2s",
            "relay.registry.loader-ttl=60s",
            "relay.limits.max-request-bytes=1048576"
        })
public abstract class ControlApiTestSupport extends ControlApiClientSupport {

    /** One prefix per test run: the store's directory lives under it too. */
    public static final String PREFIX = RedisTestSupport.uniqueKeyPrefix("control-api");

    public static final String STORE_PREFIX = PREFIX + "dp:";

    static {
        Runtime.getRuntime()
                .addShutdownHook(new Thread(() -> deleteKeys(PREFIX), "delete-test-keys"));
    }

    /** Leaves the shared Redis as the run found it. */
    static void deleteKeys(String prefix) {
        RedisClient client = RedisClient.create(RedisTestSupport.endpoint().uri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisCommands<String, String> redis = connection.sync();
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<String> page =
                        redis.scan(cursor, ScanArgs.Builder.matches(prefix + "*").limit(1000));
                if (!page.getKeys().isEmpty()) {
                    redis.unlink(page.getKeys().toArray(String[]::new));
                }
                cursor = page;
            } while (!cursor.isFinished());
        } catch (RuntimeException ex) {
            // best effort: the keys carry a unique prefix anyway
        } finally {
            client.shutdown();
        }
    }

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        RedisTestSupport.register(registry);
        registry.add("relay.redis.key-prefix", () -> PREFIX);
        registry.add("relay.store.key-prefix", () -> STORE_PREFIX);
        registry.add("relay.store.redis-uri", () -> RedisTestSupport.endpoint().uri());
    }
}
