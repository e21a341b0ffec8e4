package io.weightrelay.service.dataplane;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Binds {@code relay.dataplane.*} and checks it as the context starts, so a service with settings
 * that cannot work refuses to start (naming the property) instead of failing on first use. The
 * store's Redis takes the service's {@code spring.data.redis.username} / {@code password} / {@code
 * ssl.enabled} unless {@code relay.dataplane.redis-uri} carries credentials of its own.
 */
@AutoConfiguration
@EnableConfigurationProperties(DataplaneProperties.class)
public class DataplaneAutoConfiguration {

    @Bean
    DataplaneSettings dataplaneSettings(DataplaneProperties properties, Environment environment) {
        return new DataplaneSettings(
                properties.withRedisCredentials(
                        environment.getProperty("spring.data.redis.username"),
                        environment.getProperty("spring.data.redis.password"),
                        environment.getProperty(
                                "spring.data.redis.ssl.enabled", Boolean.class, false)));
    }
}
