package io.weightrelay.publisher.segment;

import io.weightrelay.publisher.publish.ControlPlane;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

@Configuration(proxyBeanMethods = false)
class SegmentConfiguration {

    @Bean(destroyMethod = "close")
    SegmentOwner segmentOwner(SegmentProperties properties) {
        return new SegmentOwner(properties);
    }

    @Bean(destroyMethod = "close")
    SegmentRegistrar segmentRegistrar(
            SegmentOwner owner,
            SegmentProperties properties,
            ControlPlane control,
            Environment environment) {
        return new SegmentRegistrar(owner, properties, control, environment);
    }
}
