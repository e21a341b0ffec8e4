package io.weightrelay.control.redis;

import io.github.resilience4j.common.circuitbreaker.configuration.CircuitBreakerConfigCustomizer;
import io.github.resilience4j.common.retry.configuration.RetryConfigCustomizer;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.resource.Delay;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.data.redis.autoconfigure.ClientResourcesBuilderCustomizer;
import org.springframework.boot.data.redis.autoconfigure.LettuceClientOptionsBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;
import org.springframework.data.redis.serializer.RedisSerializer;

/** Redis clients and the pieces that keep them honest during an outage. */
@Configuration(proxyBeanMethods = false)
class RedisConfiguration {

    /**
     * While disconnected, Lettuce would otherwise queue commands until they time out; rejecting
     * them at once lets the retry and the circuit breaker answer quickly. (The connect timeout is
     * Spring's {@code spring.data.redis.connect-timeout}.)
     */
    @Bean
    LettuceClientOptionsBuilderCustomizer rejectWhileDisconnected() {
        return builder ->
                builder.disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                        .autoReconnect(true);
    }

    /**
     * Lettuce's default reconnect backoff grows to 30 s; after a Redis restart that would leave
     * every request failing long after Redis is back. Cap it ({@link
     * RedisRecoveryProperties#reconnectMaxDelay}).
     */
    @Bean
    ClientResourcesBuilderCustomizer fastReconnect(RedisRecoveryProperties recovery) {
        return builder ->
                builder.reconnectDelay(
                        Delay.exponential(
                                recovery.reconnectMinDelay(),
                                recovery.reconnectMaxDelay(),
                                2,
                                TimeUnit.MILLISECONDS));
    }

    /**
     * Only a lost connection is retried and counted by the breaker: a command that timed out on a
     * large value would only time out again, and says nothing about Redis being down.
     */
    @Bean
    RetryConfigCustomizer redisRetryPredicate() {
        return RetryConfigCustomizer.of(
                RedisGuard.NAME,
                builder ->
                        builder.retryOnException(
                                e -> RedisFailures.isConnectionLost((Throwable) e)));
    }

    @Bean
    CircuitBreakerConfigCustomizer redisBreakerPredicate() {
        return CircuitBreakerConfigCustomizer.of(
                RedisGuard.NAME,
                builder -> builder.recordException(RedisFailures::isConnectionLost));
    }

    /** Binary values: compressed plans and slices. */
    @Bean
    RedisTemplate<String, byte[]> bytesRedisTemplate(RedisConnectionFactory factory) {
        RedisTemplate<String, byte[]> template = new RedisTemplate<>();
        template.setConnectionFactory(factory);
        template.setKeySerializer(RedisSerializer.string());
        template.setValueSerializer(RedisSerializer.byteArray());
        template.setHashKeySerializer(RedisSerializer.string());
        template.setHashValueSerializer(RedisSerializer.byteArray());
        return template;
    }

    @Bean
    RedisMessageListenerContainer redisListenerContainer(
            RedisConnectionFactory factory,
            RedisEvents events,
            RedisKeys keys,
            RedisRecoveryProperties recovery) {
        RedisMessageListenerContainer container = new RedisMessageListenerContainer();
        container.setConnectionFactory(factory);
        container.setRecoveryInterval(recovery.listenerRecoveryInterval().toMillis());
        // Started by ListenerStarter, which keeps trying while Redis is unreachable, so the
        // service starts (and answers 503) even when Redis is down at boot.
        container.setAutoStartup(false);
        events.subscribe(container, keys);
        return container;
    }

    @Bean
    ListenerStarter redisListenerStarter(
            RedisMessageListenerContainer container, RedisRecoveryProperties recovery) {
        return new ListenerStarter(container, recovery);
    }
}
