package io.weightrelay.control.checkpoint;

import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.weightrelay.api.publisher.client.OwnerApi;
import io.weightrelay.api.publisher.client.invoker.ApiClient;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import java.time.Duration;
import java.util.function.Supplier;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.stereotype.Component;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClient;

/**
 * The segment-owner API of a publisher, wrapped: one generated client per call (owners come and
 * go), the configured token, timeouts, and a retry with backoff when the owner cannot be reached
 * (saving and restoring are idempotent on the owner's side).
 */
@Component
class OwnerClient {

    private final CheckpointProperties properties;
    private final Retry retry;

    OwnerClient(CheckpointProperties properties) {
        this.properties = properties;
        this.retry =
                Retry.of(
                        "segment-owner",
                        RetryConfig.custom()
                                .maxAttempts(3)
                                .intervalFunction(
                                        io.github.resilience4j.core.IntervalFunction
                                                .ofExponentialBackoff(Duration.ofMillis(200), 2))
                                .retryExceptions(ResourceAccessException.class)
                                .build());
    }

    OwnerCheckpointResult save(String adminUrl, OwnerCheckpointRequest request) {
        return call(() -> api(adminUrl).saveOwnedObjects(request));
    }

    OwnerCheckpointResult restore(String adminUrl, OwnerCheckpointRequest request) {
        return call(() -> api(adminUrl).restoreOwnedObjects(request));
    }

    private <T> T call(Supplier<T> call) {
        return Retry.decorateSupplier(retry, call).get();
    }

    private OwnerApi api(String adminUrl) {
        SimpleClientHttpRequestFactory factory = new SimpleClientHttpRequestFactory();
        factory.setConnectTimeout(properties.connectTimeout());
        factory.setReadTimeout(properties.ownerTimeout());
        RestClient rest =
                ApiClient.buildRestClientBuilder(ApiClient.createDefaultMapper(null))
                        .requestFactory(factory)
                        .build();
        ApiClient client = new ApiClient(rest);
        client.setBasePath(
                adminUrl.endsWith("/") ? adminUrl.substring(0, adminUrl.length() - 1) : adminUrl);
        if (properties.ownerToken() != null && !properties.ownerToken().isEmpty()) {
            client.setBearerToken(properties.ownerToken());
        }
        return new OwnerApi(client);
    }
}
