package io.weightrelay.testkit.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Deleting a test's keys removes exactly that prefix's keys, however many, and nothing else. */
class RedisTestSupportTest {

    @Test
    void deletesEveryKeyUnderThePrefixAndNothingBesideIt() throws IOException {
        String prefix = RedisTestSupport.uniqueKeyPrefix("delete-keys");
        // A prefix with glob characters, and neighbours a naive pattern would also match.
        String globby = RedisTestSupport.uniqueKeyPrefix("delete-keys-[a]*");
        String sibling = prefix.substring(0, prefix.length() - 1) + "x:";
        String lookalike = globby.replace("[a]*", "a-and-more");
        try (RedisTestSupport.Connection redis =
                new RedisTestSupport.Connection(RedisTestSupport.endpoint())) {
            List<Object> own = new ArrayList<>(List.of("EXISTS", globby + "k"));
            for (int i = 0; i < 2500; i++) {
                redis.call("SET", prefix + "k" + i, "v");
                own.add(prefix + "k" + i);
            }
            redis.call("SET", globby + "k", "v");
            redis.call("SET", sibling + "k", "v");
            redis.call("SET", lookalike + "k", "v");
            try {
                RedisTestSupport.deleteKeys(prefix);
                RedisTestSupport.deleteKeys(globby);

                assertThat(redis.call(own.toArray())).isEqualTo(0L);
                assertThat(redis.call("EXISTS", sibling + "k", lookalike + "k")).isEqualTo(2L);
            } finally {
                redis.call("DEL", sibling + "k", lookalike + "k");
            }
        }
    }

    @Test
    void refusesAPrefixThatIsNotATestsOwn() {
        assertThatThrownBy(() -> RedisTestSupport.deleteKeys("wr:"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RedisTestSupport.deleteKeys("wr:test:"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
