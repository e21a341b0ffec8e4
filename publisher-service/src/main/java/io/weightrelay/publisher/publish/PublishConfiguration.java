package io.weightrelay.publisher.publish;

import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.retry.RetryRegistry;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.service.client.RemoteCalls;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
class PublishConfiguration {

    @Bean
    ControlPlane controlPlane(
            PublishProperties properties, RetryRegistry retries, CircuitBreakerRegistry breakers) {
        return new RestControlPlane(
                properties, RemoteCalls.named("control-api", retries, breakers));
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
