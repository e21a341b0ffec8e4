package io.weightrelay.publisher.segment;

import io.weightrelay.service.dataplane.DataplaneSettings;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

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
}
