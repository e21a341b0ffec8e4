package io.weightrelay.publisher.staging;

import io.weightrelay.publisher.segment.SegmentOwner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
class StagingConfiguration {

    @Bean(destroyMethod = "close")
    StagingArea stagingArea(StagingProperties properties, SegmentOwner owner) {
        return new StagingArea(properties, owner);
    }
}
