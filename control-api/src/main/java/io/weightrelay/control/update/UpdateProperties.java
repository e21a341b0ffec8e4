package io.weightrelay.control.update;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * @param sessionTtl how long a session stays in Redis after it started
 */
@Validated
@ConfigurationProperties("relay.updates")
public record UpdateProperties(@DefaultValue("24h") Duration sessionTtl) {}
