package io.weightrelay.control.redis;

import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.test.context.DynamicPropertyRegistrar;

/**
 * A {@link PrivateRedis} of the test's own as a bean of its context, started and made the Redis of
 * its control-api (as Spring Boot's Testcontainers beans are): a test imports this configuration
 * and injects the server it may kill and start again (a test that needs it stopped at first
 * overrides {@link #privateRedis()}). It is stopped when the context closes.
 */
@TestConfiguration(proxyBeanMethods = false)
class PrivateRedisConfiguration {

    @Bean
    PrivateRedis privateRedis() {
        return PrivateRedis.started();
    }

    @Bean
    DynamicPropertyRegistrar privateRedisProperties(PrivateRedis redis) {
        return redis::serveAsRedisOf;
    }
}
