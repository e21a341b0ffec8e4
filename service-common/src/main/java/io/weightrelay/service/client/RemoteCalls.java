package io.weightrelay.service.client;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryRegistry;
import java.util.function.Supplier;

/**
 * The calls of one service to another, made resilient from configuration: the Resilience4j retry
 * {@code resilience4j.retry.instances.<name>} and, when one is configured, the circuit breaker
 * {@code resilience4j.circuitbreaker.instances.<name>} (the breaker outside, so an open breaker is
 * not retried). Each service's {@code application.yaml} documents its instances and defaults; a
 * name with no retry configured gets Resilience4j's defaults. Thread safe.
 */
public final class RemoteCalls {

    private final Retry retry;
    private final CircuitBreaker breaker;

    private RemoteCalls(Retry retry, CircuitBreaker breaker) {
        this.retry = retry;
        this.breaker = breaker;
    }

    /** The calls named {@code name} in both registries. */
    public static RemoteCalls named(
            String name, RetryRegistry retries, CircuitBreakerRegistry breakers) {
        return new RemoteCalls(
                retries.retry(name), breakers == null ? null : breakers.find(name).orElse(null));
    }

    /** Calls retried by {@code retry} alone, for tests and for callers without Spring. */
    public static RemoteCalls retrying(Retry retry) {
        return new RemoteCalls(retry, null);
    }

    /** Runs {@code call} through the breaker (when configured) and the retry. */
    public <T> T call(Supplier<T> call) {
        Supplier<T> retried = Retry.decorateSupplier(retry, call);
        return breaker == null ? retried.get() : breaker.executeSupplier(retried);
    }

    public Retry retry() {
        return retry;
    }
}
