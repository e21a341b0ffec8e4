package io.weightrelay.control.update;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * @param sessionTtl how long a session stays in Redis after it started
 * @param verifyChecksums prove, at the all-applied barrier, every byte the loaders read against the
 *     checksums registered at publish (off only to measure what the proof costs)
 * @param livenessEvery how often a loader waiting at a barrier has the session checked for
 *     participants that are no longer registered (a dead loader's registration expires with its
 *     heartbeats): such a session fails naming the loader within its registration TTL and this
 *     interval, not after the phase timeout
 */
@Validated
@ConfigurationProperties("relay.updates")
public record UpdateProperties(
        @DefaultValue("24h") Duration sessionTtl,
        @DefaultValue("true") boolean verifyChecksums,
        @DefaultValue("5s") Duration livenessEvery) {}
