package io.weightrelay.control.redis;

import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryRegistry;
import io.weightrelay.control.store.StoreProblems;
import io.weightrelay.service.problem.ProblemKind;
import io.weightrelay.service.problem.RelayException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.springframework.stereotype.Component;

/**
 * Every Redis call of control-api goes through here: retried with exponential backoff while the
 * connection is down, counted by the {@code redis} circuit breaker, and turned into a 503 {@code
 * redis-unavailable} problem when Redis stays away. Only lost connections are retried and open the
 * breaker; a command timeout is answered with 503 at once, and {@link RedisProbe} decides from
 * Redis's own answers (not from the latency of large values) whether the breaker opens or closes.
 * Settings live under {@code resilience4j.retry.instances.redis} and {@code
 * resilience4j.circuitbreaker.instances.redis}.
 *
 * <p>Retried operations must be safe to run twice; the scripts that change state are written so
 * (idempotent, or fenced by a request nonce).
 */
@Component
public final class RedisGuard {

    public static final String NAME = "redis";

    public static final ProblemKind REDIS_UNAVAILABLE = StoreProblems.REDIS_UNAVAILABLE;

    private final CircuitBreaker circuitBreaker;
    private final Retry retry;
    private final AtomicLong timeouts = new AtomicLong();
    private volatile String authFailure;
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(RedisGuard.class);

    public RedisGuard(CircuitBreakerRegistry circuitBreakers, RetryRegistry retries) {
        this.circuitBreaker = circuitBreakers.circuitBreaker(NAME);
        this.retry = retries.retry(NAME);
    }

    public <T> T call(Supplier<T> operation) {
        Supplier<T> guarded =
                Retry.decorateSupplier(
                        retry, CircuitBreaker.decorateSupplier(circuitBreaker, operation));
        try {
            T result = guarded.get();
            if (authFailure != null) {
                authFailure = null;
            }
            return result;
        } catch (CallNotPermittedException ex) {
            String auth = authFailure;
            throw unavailable(
                    "Redis is unavailable (circuit open); retry shortly"
                            + (auth == null ? "" : "; last failure: " + refused(auth)),
                    ex);
        } catch (RuntimeException ex) {
            String auth = RedisFailures.authFailure(ex);
            if (auth != null) {
                if (!auth.equals(authFailure)) {
                    log.error("{}", refused(auth));
                }
                authFailure = auth;
                throw unavailable(refused(auth), ex);
            }
            if (RedisFailures.isTimeout(ex)) {
                timeouts.incrementAndGet();
                throw unavailable("Redis did not answer in time; retry shortly", ex);
            }
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

    /** Command timeouts since the last call, so that a probe can ask Redis whether it is there. */
    long takeTimeouts() {
        return timeouts.getAndSet(0);
    }

    /** Redis answered a probe: let every call through again at once. */
    void redisAnswers() {
        if (circuitBreaker.getState() != CircuitBreaker.State.CLOSED) {
            circuitBreaker.transitionToClosedState();
        }
    }

    /** Redis did not answer a probe although no call lost its connection: it hangs. */
    void redisSilent() {
        if (circuitBreaker.getState() == CircuitBreaker.State.CLOSED) {
            circuitBreaker.transitionToOpenState();
        }
    }

    private static String refused(String answer) {
        return "Redis refused control-api's credentials or ACL (spring.data.redis.username /"
                + " password, the ACL user's key and channel patterns): "
                + answer;
    }

    private static RelayException unavailable(String detail, Throwable cause) {
        RelayException ex = REDIS_UNAVAILABLE.exception(detail, cause);
        ex.getHeaders().set("Retry-After", "1");
        return ex;
    }
}
