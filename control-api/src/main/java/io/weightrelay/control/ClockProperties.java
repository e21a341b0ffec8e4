package io.weightrelay.control;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * The clock of this control-api process.
 *
 * @param skew an offset added to the system clock: a test and fault-injection knob (the lab's
 *     {@code control-api-clock-skew} case starts a replica minutes off), never set in production.
 *     Nothing another instance reads depends on this clock: expiries, deadlines and ordered stamps
 *     come from the Redis server's ({@link io.weightrelay.control.redis.RedisTime}); it times only
 *     this process's own waits.
 */
@Validated
@ConfigurationProperties("relay.clock")
public record ClockProperties(@DefaultValue("0s") Duration skew) {}
