package io.weightrelay.control.assignment;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * @param cacheTtl how long a computed assignment stays cached after its last use
 */
@Validated
@ConfigurationProperties("relay.assignments")
public record AssignmentProperties(@DefaultValue("7d") Duration cacheTtl) {}
