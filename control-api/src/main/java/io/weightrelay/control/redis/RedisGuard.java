package io.weightrelay.control.redis;

import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryRegistry;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import java.util.function.Supplier;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;

/**
 * Every Redis call of control-api goes through here: retried with exponential backoff while the
 * connection is down, counted by the {@code redis} circuit breaker, and turned into a 503 {@code
 * redis-unavailable} problem when Redis stays away. Settings live under {@code
 * resilience4j.retry.instances.redis} and {@code resilience4j.circuitbreaker.instances.redis}.
 *
 * <p>Retried operations must be safe to run twice; the scripts that change state are written so
 * (idempotent, or fenced by a request nonce).
 */
@Component
public final class RedisGuard {

    public static final String NAME = "redis";

    public static final ProblemKind REDIS_UNAVAILABLE =
            new ProblemKind(
                    "redis-unavailable", HttpStatus.SERVICE_UNAVAILABLE, "State store unavailable");

    private final CircuitBreaker circuitBreaker;
    private final Retry retry;

    public RedisGuard(CircuitBreakerRegistry circuitBreakers, RetryRegistry retries) {
        this.circuitBreaker = circuitBreakers.circuitBreaker(NAME);
        this.retry = retries.retry(NAME);
    }

    public <T> T call(Supplier<T> operation) {
        Supplier<T> guarded =
                Retry.decorateSupplier(
                        retry, CircuitBreaker.decorateSupplier(circuitBreaker, operation));
        try {
            return guarded.get();
        } catch (CallNotPermittedException ex) {
            throw unavailable("Redis is unavailable (circuit open); retry shortly", ex);
        } catch (RuntimeException ex) {
            if (RedisFailures.isUnavailable(ex)) {
                throw unavailable("Redis is unavailable; retry shortly", ex);
            }
            throw ex;
        }
    }

    public void run(Runnable operation) {
        call(
                () -> {
                    operation.run();
                    return null;
                });
    }

    public CircuitBreaker.State state() {
        return circuitBreaker.getState();
    }

    private static RelayException unavailable(String detail, Throwable cause) {
        RelayException ex = REDIS_UNAVAILABLE.exception(detail, cause);
        ex.getHeaders().set("Retry-After", "1");
        return ex;
    }
}
