package io.weightrelay.service.dataplane;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Binds {@code relay.dataplane.*} and checks it as the context starts, so a service with settings
 * that cannot work refuses to start (naming the property) instead of failing on first use.
 */
@AutoConfiguration
@EnableConfigurationProperties(DataplaneProperties.class)
public class DataplaneAutoConfiguration {

    @Bean
    DataplaneSettings dataplaneSettings(DataplaneProperties properties) {
        return new DataplaneSettings(properties);
    }
}
