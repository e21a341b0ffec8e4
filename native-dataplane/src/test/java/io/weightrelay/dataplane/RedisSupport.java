package io.weightrelay.dataplane;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The machine's Redis for tests: a fast reachability check, per-test key prefixes, direct access.
 */
final class RedisSupport {
    static final String URI = System.getProperty("wr.redis.uri", "redis://127.0.0.1:6379");

    private RedisSupport() {}

    /** Fails in a second with a clear message when Redis is not there. */
    static void requireRedis() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", 6379), 1000);
        } catch (IOException e) {
            throw new IllegalStateException("tests need Redis at 127.0.0.1:6379", e);
        }
        System.out.println("native-dataplane tests use Redis at " + URI);
    }

    /** A key prefix no other test uses. */
    static String uniquePrefix() {
        return "wr:test:dp:" + UUID.randomUUID().toString().substring(0, 8) + ":";
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

    /** Deletes every key under the prefix. */
    static void deleteKeys(String prefix) {
        call(
                redis -> {
                    ScanCursor cursor = ScanCursor.INITIAL;
                    do {
                        KeyScanCursor<String> page =
                                redis.scan(
                                        cursor, ScanArgs.Builder.matches(prefix + "*").limit(500));
                        if (!page.getKeys().isEmpty()) {
                            redis.del(page.getKeys().toArray(new String[0]));
                        }
                        cursor = page;
                    } while (!cursor.isFinished());
                    return null;
                });
    }
}
