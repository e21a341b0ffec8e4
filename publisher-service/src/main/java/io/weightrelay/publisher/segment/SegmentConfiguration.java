package io.weightrelay.publisher.segment;

import io.weightrelay.publisher.publish.ControlPlane;
import io.weightrelay.service.dataplane.DataplaneSettings;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

@Configuration(proxyBeanMethods = false)
class SegmentConfiguration {

    @Bean(destroyMethod = "close")
    SegmentOwner segmentOwner(SegmentProperties properties, DataplaneSettings settings) {
        // Refuse an unreachable admin URL before a segment is created, not after.
        if (properties.adminUrl() != null && !properties.adminUrl().isBlank()) {
            settings.checkAdvertisedUrl("relay.segment.admin-url", properties.adminUrl());
        }
        return new SegmentOwner(properties, settings);
    }

    @Bean
    TransportMeters transportMeters(SegmentOwner owner) {
        return new TransportMeters(owner);
    }

    @Bean(destroyMethod = "close")
    SegmentRegistrar segmentRegistrar(
            SegmentOwner owner,
            SegmentProperties properties,
            ControlPlane control,
            DataplaneSettings settings,
            Environment environment) {
        return new SegmentRegistrar(owner, properties, control, settings, environment);
    }
}
