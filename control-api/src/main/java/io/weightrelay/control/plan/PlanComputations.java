package io.weightrelay.control.plan;

import io.weightrelay.service.concurrent.DaemonThreads;
import io.weightrelay.service.problem.RelayException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.stereotype.Component;

/**
 * Runs plan computations off the request threads, one at a time, with at most {@link #QUEUED}
 * waiting: a plan of Kimi-K2 holds hundreds of MB while it is computed, so a burst of requests for
 * different plans must queue behind one another instead of sharing the heap, and one beyond the
 * queue is refused at once with 503 {@code plan-busy} and {@code Retry-After}. Requests for a plan
 * already being computed never get here: they share the running computation.
 */
@Component
class PlanComputations implements DisposableBean {

    static final int QUEUED = 4;

    private final ThreadPoolExecutor pool =
            DaemonThreads.single("plan-compute", QUEUED, new ThreadPoolExecutor.AbortPolicy());

    /** Runs {@code work} on the computing thread and waits at most {@code timeout} for it. */
    <T> T run(String planId, Supplier<T> work, Duration timeout) {
        Future<T> running;
        try {
            running = pool.submit(work::get);
        } catch (RejectedExecutionException e) {
            throw busy(
                    "plan "
                            + planId
                            + " waits behind "
                            + (1 + QUEUED)
                            + " computations already (one at a time, "
                            + QUEUED
                            + " queued); retry shortly");
        }
        try {
            return running.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            // It goes on and caches the plan; a later request finds it.
            throw busy("plan " + planId + " is still being computed; retry shortly");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw busy("interrupted while plan " + planId + " was computed");
        }
    }

    private static RelayException busy(String detail) {
        RelayException ex = PlanProblems.PLAN_BUSY.exception(detail);
        ex.getHeaders().set("Retry-After", "1");
        return ex;
    }

    @Override
    public void destroy() {
        pool.shutdownNow();
    }
}
