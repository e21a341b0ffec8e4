package io.weightrelay.publisher.publish;

import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import java.time.Duration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
class PublishConfiguration {

    @Bean
    ControlPlane controlPlane(PublishProperties properties) {
        Retry retry =
                Retry.of(
                        "control-api",
                        RetryConfig.custom()
                                .maxAttempts(3)
                                .waitDuration(Duration.ofMillis(200))
                                .retryOnException(RestControlPlane::isTransient)
                                .build());
        return new RestControlPlane(properties, retry);
    }

    @Bean(destroyMethod = "close")
    Publisher publisher(
            StagingArea staging,
            SegmentOwner owner,
            ControlPlane control,
            PublishMetrics metrics,
            PublishProperties properties) {
        return new Publisher(staging, owner, control, metrics, properties);
    }
}
