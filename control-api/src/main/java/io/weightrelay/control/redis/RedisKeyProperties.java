package io.weightrelay.control.redis;

import jakarta.validation.constraints.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Where control-api's keys live.
 *
 * @param keyPrefix first part of every key and channel; must stay under the project's {@code wr:}
 *     namespace so that tests and deployments sharing one Redis never collide
 */
@Validated
@ConfigurationProperties("relay.redis")
public record RedisKeyProperties(
        @DefaultValue("wr:") @Pattern(regexp = "^wr:.*") String keyPrefix) {}
