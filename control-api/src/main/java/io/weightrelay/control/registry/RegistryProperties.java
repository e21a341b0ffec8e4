package io.weightrelay.control.registry;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Heartbeat TTLs: a registration not renewed within its TTL counts as dead.
 *
 * @param segmentTtl TTL of segment owners
 * @param loaderTtl TTL of loaders
 * @param placementTtl TTL of a stored fragment template; every registration and heartbeat of a
 *     loader naming it renews it
 */
@Validated
@ConfigurationProperties("relay.registry")
public record RegistryProperties(
        @DefaultValue("15s") Duration segmentTtl,
        @DefaultValue("15s") Duration loaderTtl,
        @DefaultValue("1d") Duration placementTtl) {}
