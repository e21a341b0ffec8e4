package io.weightrelay.publisher.checkpoint;

import io.weightrelay.publisher.publish.ControlPlane;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
class CheckpointConfiguration {

    @Bean
    OwnerCheckpoints ownerCheckpoints(
            SegmentOwner owner, StagingArea staging, ControlPlane control) {
        return new OwnerCheckpoints(owner, staging, control);
    }
}
