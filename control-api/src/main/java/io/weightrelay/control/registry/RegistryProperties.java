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
 * @param tick how often every control-api instance records in Redis that it serves ({@code
 *     tick.lua})
 * @param outageGap a last tick older than this means no control-api instance served in between:
 *     registrations that expired then could not have been renewed and get one TTL of grace after
 *     control-api is back (README, "Liveness across a control-api outage"); keep it a few ticks
 */
@Validated
@ConfigurationProperties("relay.registry")
public record RegistryProperties(
        @DefaultValue("15s") Duration segmentTtl,
        @DefaultValue("15s") Duration loaderTtl,
        @DefaultValue("1d") Duration placementTtl,
        @DefaultValue("1s") Duration tick,
        @DefaultValue("3s") Duration outageGap) {}
