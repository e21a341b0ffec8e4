package io.weightrelay.control.checkpoint;

import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.retry.RetryRegistry;
import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.publisher.client.OwnerApi;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.service.client.RemoteCalls;
import org.springframework.stereotype.Component;

/**
 * The segment-owner API of a publisher, wrapped: one generated client per call (owners come and
 * go), the configured token and timeouts, and the Resilience4j retry {@code segment-owner} ({@code
 * application.yaml}: backoff when the owner cannot be reached; saving and restoring are idempotent
 * on the owner's side).
 */
@Component
class OwnerClient {

    private final CheckpointProperties properties;
    private final RemoteCalls calls;

    OwnerClient(
            CheckpointProperties properties,
            RetryRegistry retries,
            CircuitBreakerRegistry breakers) {
        this.properties = properties;
        this.calls = RemoteCalls.named("segment-owner", retries, breakers);
    }

    OwnerCheckpointResult save(String adminUrl, OwnerCheckpointRequest request) {
        return calls.call(() -> api(adminUrl).saveOwnedObjects(request));
    }

    OwnerCheckpointResult restore(String adminUrl, OwnerCheckpointRequest request) {
        return calls.call(() -> api(adminUrl).restoreOwnedObjects(request));
    }

    private OwnerApi api(String adminUrl) {
        Endpoint owner =
                new Endpoint(
                        adminUrl,
                        properties.ownerToken(),
                        properties.connectTimeout(),
                        properties.ownerTimeout());
        return new OwnerApi(RelayClients.of(owner).publisher());
    }
}
