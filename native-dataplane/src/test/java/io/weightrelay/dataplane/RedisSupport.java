package io.weightrelay.dataplane;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The tests' Redis ({@link RedisTestSupport}: here the machine's own, checked in a second, since
 * this module's tests have no Testcontainers), per-test key prefixes and their deletion from there,
 * and direct access to what the data plane keeps in it.
 */
final class RedisSupport {
    static final String URI = RedisTestSupport.endpoint().uri();

    private RedisSupport() {}

    /**
     * Fails in a second with a clear message when Redis is not there (loading this class asks
     * {@link RedisTestSupport#endpoint()}, which fails so).
     */
    static void requireRedis() {
        System.out.println("native-dataplane tests use Redis at " + URI);
    }

    /** A key prefix no other test uses. */
    static String uniquePrefix() {
        return RedisTestSupport.uniqueKeyPrefix("dp");
    }

    /** Runs {@code commands} on a connection of their own to the test Redis. */
    static <T> T call(Function<RedisCommands<String, String>, T> commands) {
        RedisClient client = RedisClient.create(URI);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            return commands.apply(c.sync());
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    /** Every field of the hash at {@code key}. */
    static Map<String, String> hash(String key) {
        return call(redis -> redis.hgetall(key));
    }

    static void hashSet(String key, Map<String, String> fields) {
        call(redis -> redis.hset(key, fields));
    }

    /**
     * Writes the descriptor of segment {@code name} as an owner that died would have left it:
     * loopback, port 1 (nothing listens), 4096 bytes, a file that does not exist; {@code fields}
     * add to or override these.
     */
    static void deadOwnerDescriptor(String prefix, String name, Map<String, String> fields) {
        Map<String, String> all =
                new java.util.HashMap<>(
                        Map.of(
                                "host", "127.0.0.1",
                                "port", "1",
                                "size", "4096",
                                "shm", "/dev/shm/none"));
        all.putAll(fields);
        hashSet(prefix + "seg:" + name, all);
    }

    static void hashDelete(String key, String field) {
        call(redis -> redis.hdel(key, field));
    }

    /** Deletes every key under {@code prefix}, one of {@link #uniquePrefix()}. */
    static void deleteKeys(String prefix) {
        RedisTestSupport.deleteKeys(prefix);
    }
}
