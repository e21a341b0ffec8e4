package io.weightrelay.control.update;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * @param sessionTtl how long a session stays in Redis after it started
 * @param verifyChecksums prove, at the all-applied barrier, every byte the loaders read against the
 *     checksums registered at publish (off only to measure what the proof costs)
 */
@Validated
@ConfigurationProperties("relay.updates")
public record UpdateProperties(
        @DefaultValue("24h") Duration sessionTtl, @DefaultValue("true") boolean verifyChecksums) {}
