package io.weightrelay.publisher.staging;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
class StagingConfiguration {

    @Bean(destroyMethod = "close")
    StagingArea stagingArea(StagingProperties properties) {
        return new StagingArea(properties);
    }
}
