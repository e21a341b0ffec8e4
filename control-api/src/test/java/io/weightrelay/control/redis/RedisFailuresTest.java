package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.RedisSystemException;

/** How Redis failures are told apart, with the exceptions Spring Data Redis and Lettuce throw. */
class RedisFailuresTest {

    /**
     * What a command in flight gets when Redis is killed under it (seen in fault case 4): retried
     * and a 503, never a 500.
     */
    @Test
    void aCommandDrainedWhenRedisDiedIsAConnectionLoss() {
        RuntimeException drained =
                new RedisSystemException(
                        "Redis exception", new RedisException("Connection disconnected"));
        assertThat(RedisFailures.isConnectionLost(drained)).isTrue();
        assertThat(RedisFailures.isUnavailable(drained)).isTrue();
    }

    @Test
    void aTimeoutIsUnavailableButNotAConnectionLossAndAScriptErrorIsNeither() {
        RuntimeException timeout =
                new RedisSystemException("x", new RedisCommandTimeoutException("timed out"));
        assertThat(RedisFailures.isConnectionLost(timeout)).isFalse();
        assertThat(RedisFailures.isUnavailable(timeout)).isTrue();
        RuntimeException script =
                new RedisSystemException("x", new RedisException("ERR user_script:1: bad"));
        assertThat(RedisFailures.isUnavailable(script)).isFalse();
    }
}
