package io.weightrelay.control.redis;

import io.weightrelay.testkit.redis.RedisTestSupport;
import org.junit.jupiter.api.AfterEach;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.data.redis.test.autoconfigure.DataRedisTest;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The Redis slice alone ({@code @DataRedisTest}) against the test Redis; each test class writes
 * under its own key prefix, and what it wrote is deleted after each test.
 */
@DataRedisTest
public abstract class RedisSliceTestSupport {

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        RedisTestSupport.register(registry);
    }

    @Autowired protected StringRedisTemplate redis;

    /** The key prefix this class's tests write under. */
    protected abstract String prefix();

    @AfterEach
    void deleteKeys() {
        RedisTestSupport.deleteKeys(prefix());
    }
}
