package io.weightrelay.control.redis;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How control-api finds Redis again after an outage ({@code relay.redis.recovery.*}). How long it
 * waits for Redis at all is Spring's: {@code spring.data.redis.connect-timeout} (500 ms) and {@code
 * spring.data.redis.timeout} (2 s) in {@code application.yaml}.
 *
 * @param reconnectMinDelay first delay of the client's reconnect backoff (default {@code 20ms})
 * @param reconnectMaxDelay its cap (default {@code 1s}; Lettuce's own grows to 30 s, which would
 *     leave requests failing long after Redis is back)
 * @param listenerMinDelay first delay between attempts to subscribe to the events channel when
 *     Redis is unreachable at start (default {@code 100ms}), doubled after each failure
 * @param listenerMaxDelay its cap (default {@code 2s})
 * @param listenerRecoveryInterval how often the subscription is retried once it was lost (default
 *     {@code 500ms})
 * @param recheck the longest a long poll (an active-generation wait, a barrier) waits without
 *     re-reading its state, so an event lost in an outage costs at most this (default {@code 5s})
 */
@ConfigurationProperties("relay.redis.recovery")
public record RedisRecoveryProperties(
        @DefaultValue("20ms") Duration reconnectMinDelay,
        @DefaultValue("1s") Duration reconnectMaxDelay,
        @DefaultValue("100ms") Duration listenerMinDelay,
        @DefaultValue("2s") Duration listenerMaxDelay,
        @DefaultValue("500ms") Duration listenerRecoveryInterval,
        @DefaultValue("5s") Duration recheck) {}
