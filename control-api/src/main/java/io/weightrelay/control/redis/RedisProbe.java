package io.weightrelay.control.redis;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Asks Redis itself, on a connection of its own (so a large value in flight on the shared one
 * cannot delay the answer), whether it is there: while the {@code redis} breaker is open or
 * half-open, and after calls timed out. A PONG closes the breaker at once, so control-api serves
 * again within one probe interval of Redis answering, whatever the traffic; silence after command
 * timeouts opens it (Redis hangs). The breaker's own counting sees only lost connections.
 */
@Component
class RedisProbe implements DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(RedisProbe.class);

    private final RedisGuard guard;
    private final RedisClient client;
    private StatefulRedisConnection<String, String> connection;

    RedisProbe(
            RedisGuard guard,
            @Value("${spring.data.redis.host:127.0.0.1}") String host,
            @Value("${spring.data.redis.port:6379}") int port,
            @Value("${spring.data.redis.password:}") String password,
            @Value("${relay.redis.probe-timeout-ms:500}") long timeoutMs) {
        this.guard = guard;
        RedisURI.Builder uri =
                RedisURI.builder()
                        .withHost(host)
                        .withPort(port)
                        .withTimeout(Duration.ofMillis(timeoutMs));
        if (!password.isEmpty()) {
            uri.withPassword(password.toCharArray());
        }
        this.client = RedisClient.create(uri.build());
    }

    @Scheduled(
            fixedDelayString = "${relay.redis.probe-interval-ms:500}",
            initialDelayString = "${relay.redis.probe-interval-ms:500}")
    void probe() {
        CircuitBreaker.State state = guard.state();
        long timeouts = guard.takeTimeouts();
        if (state == CircuitBreaker.State.CLOSED && timeouts == 0) {
            return;
        }
        if (answers()) {
            if (state != CircuitBreaker.State.CLOSED) {
                log.info(
                        "Redis answers again: closing the {} circuit ({})", RedisGuard.NAME, state);
                guard.redisAnswers();
            }
        } else if (state == CircuitBreaker.State.CLOSED) {
            log.warn(
                    "Redis did not answer a probe after {} command timeout(s): opening the {}"
                            + " circuit",
                    timeouts,
                    RedisGuard.NAME);
            guard.redisSilent();
        }
    }

    private synchronized boolean answers() {
        try {
            if (connection == null || !connection.isOpen()) {
                close();
                connection = client.connect();
            }
            return "PONG".equals(connection.sync().ping());
        } catch (RuntimeException e) {
            close();
            return false;
        }
    }

    private synchronized void close() {
        if (connection != null) {
            try {
                connection.close();
            } catch (RuntimeException e) {
                // already gone
            }
            connection = null;
        }
    }

    @Override
    public void destroy() {
        close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
}
