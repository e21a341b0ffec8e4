package io.weightrelay.publisher.segment;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.service.test.RedisTestSupport;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Finding and purging directory entries of a segment, against the real Redis. */
class StaleObjectsTest {

    private final String prefix = RedisTestSupport.uniqueKeyPrefix("stale-objects");
    private final String uri = RedisTestSupport.endpoint().uri();

    @AfterEach
    void delete() {
        RedisTestSupport.deleteKeys(prefix);
    }

    @Test
    void purgesOnlyEntriesOfTheSegmentThatStillSayWhatWasSeen() {
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisCommands<String, String> redis = c.sync();
            for (int i = 0; i < 2500; i++) {
                redis.hset(
                        prefix + "obj:m/" + (i % 3) + "/f" + i,
                        Map.of("size", "64", "pin", "1", "replicas", "seg-a@" + (64 * i)));
            }
            redis.hset(prefix + "obj:m/9/other", Map.of("replicas", "seg-b@0"));
            redis.hset(prefix + "obj:m/9/both", Map.of("replicas", "seg-b@0;seg-a@128"));
            redis.hset(prefix + "obj:m/9/prefixed", Map.of("replicas", "seg-aa@0"));

            Map<String, String> seen = StaleObjects.find(uri, prefix, "seg-a");
            assertThat(seen).hasSize(2501).doesNotContainKey(prefix + "obj:m/9/prefixed");

            // an entry that changed since it was seen is left alone
            redis.hset(prefix + "obj:m/0/f0", "replicas", "seg-a@999999");
            List<String> purged = StaleObjects.purge(uri, prefix, seen);

            assertThat(purged).hasSize(2500).contains("m/9/both").doesNotContain("m/0/f0");
            assertThat(redis.exists(prefix + "obj:m/0/f0")).isEqualTo(1L);
            assertThat(redis.exists(prefix + "obj:m/1/f1")).isZero();
            assertThat(redis.exists(prefix + "obj:m/9/other")).isEqualTo(1L);
            assertThat(redis.exists(prefix + "obj:m/9/prefixed")).isEqualTo(1L);
            assertThat(StaleObjects.generations(purged))
                    .containsExactly("m/0", "m/1", "m/2", "m/9");
        } finally {
            client.shutdown();
        }
    }
}
