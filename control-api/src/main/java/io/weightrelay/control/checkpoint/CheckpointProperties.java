package io.weightrelay.control.checkpoint;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * How control-api calls segment owners.
 *
 * @param ownerToken bearer token control-api presents to owners (an {@code owner} token of the
 *     publishers), only at admin URLs registered with an owner credential
 * @param connectTimeout connect timeout of one owner call
 * @param ownerTimeout how long one owner may take to save or restore
 * @param parallelism owners called at once
 */
@Validated
@ConfigurationProperties("relay.checkpoints")
public record CheckpointProperties(
        String ownerToken,
        @DefaultValue("2s") Duration connectTimeout,
        @DefaultValue("10m") Duration ownerTimeout,
        @DefaultValue("8") @Min(1) @Max(256) int parallelism) {

    @Override
    public String toString() {
        return "CheckpointProperties[ownerToken="
                + (ownerToken == null || ownerToken.isEmpty() ? "<none>" : "<hidden>")
                + ", connectTimeout="
                + connectTimeout
                + ", ownerTimeout="
                + ownerTimeout
                + ", parallelism="
                + parallelism
                + "]";
    }
}
