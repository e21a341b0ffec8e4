package io.weightrelay.publisher.publish;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Publishing.
 *
 * @param controlApiUrl base URL of control-api, or of several instances behind one Redis separated
 *     by commas (each call fails over to the next that can be reached)
 * @param controlApiToken bearer token (trainer role) for control-api; empty when it runs without
 *     tokens
 * @param ownerToken bearer token (owner role, ideally bound to this segment) with which the segment
 *     and its admin URL are registered with control-api; empty: the segment is registered with
 *     {@code controlApiToken} and without an admin URL, so control-api cannot call this publisher
 *     for checkpoints, and refuses its reports of generations lost in a restart
 * @param controlApiTimeout read timeout of one control-api call
 * @param workerThreads threads that convert and checksum the fragments of a batch (CPU bound)
 * @param storeThreads threads that store them (each put waits on the store's directory, so more
 *     threads than cores overlap those waits)
 * @param registerChunk objects per control-api registration call; chunks are sent while the rest of
 *     the batch is still being stored
 * @param keepGenerations per-generation states kept for status queries
 */
@Validated
@ConfigurationProperties("relay.publish")
public record PublishProperties(
        @NotBlank @DefaultValue("http://127.0.0.1:8080") String controlApiUrl,
        @DefaultValue("") String controlApiToken,
        @DefaultValue("") String ownerToken,
        @DefaultValue("30s") Duration controlApiTimeout,
        @Min(1) @Max(64) @DefaultValue("2") int workerThreads,
        @Min(1) @Max(64) @DefaultValue("8") int storeThreads,
        @Min(1) @DefaultValue("256") int registerChunk,
        @Min(1) @DefaultValue("16") int keepGenerations) {

    @Override
    public String toString() {
        return "PublishProperties[controlApiUrl="
                + controlApiUrl
                + ", controlApiToken="
                + (controlApiToken.isEmpty() ? "<none>" : "<hidden>")
                + ", ownerToken="
                + (ownerToken.isEmpty() ? "<none>" : "<hidden>")
                + ", controlApiTimeout="
                + controlApiTimeout
                + ", workerThreads="
                + workerThreads
                + ", storeThreads="
                + storeThreads
                + ", registerChunk="
                + registerChunk
                + ", keepGenerations="
                + keepGenerations
                + "]";
    }
}
