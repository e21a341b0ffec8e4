package io.weightrelay.dataplane;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/** The machine's Redis for tests: a fast reachability check and per-test key prefixes. */
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

    /** Deletes every key under the prefix. */
    static void deleteKeys(String prefix) {
        RedisClient client = RedisClient.create(URI);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<String> page =
                        c.sync().scan(cursor, ScanArgs.Builder.matches(prefix + "*").limit(500));
                if (!page.getKeys().isEmpty()) {
                    c.sync().del(page.getKeys().toArray(new String[0]));
                }
                cursor = page;
            } while (!cursor.isFinished());
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }
}
