package io.weightrelay.control.checkpoint;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Where checkpoints may live and how control-api calls segment owners.
 *
 * @param root the directory every checkpoint directory must be inside (absolute; the same path on
 *     control-api and every owner). Unset: every save and restore is refused with {@code
 *     checkpoint-directory-refused}. A directory naming {@code ..} or passing through a symbolic
 *     link below the root is refused too.
 * @param ownerToken bearer token control-api presents to owners (an {@code owner} token of the
 *     publishers), only at admin URLs registered with an owner credential
 * @param connectTimeout connect timeout of one owner call
 * @param ownerTimeout how long one owner may take to save or restore
 * @param parallelism owners called at once
 */
@Validated
@ConfigurationProperties("relay.checkpoints")
public record CheckpointProperties(
        Path root,
        String ownerToken,
        @DefaultValue("2s") Duration connectTimeout,
        @DefaultValue("10m") Duration ownerTimeout,
        @DefaultValue("8") @Min(1) @Max(256) int parallelism) {

    public CheckpointProperties {
        if (root != null && !root.isAbsolute()) {
            throw new IllegalArgumentException(
                    "relay.checkpoints.root must be an absolute directory, not '" + root + "'");
        }
        if (root != null) {
            root = root.normalize();
        }
    }

    @Override
    public String toString() {
        return "CheckpointProperties[root="
                + root
                + ", ownerToken="
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
