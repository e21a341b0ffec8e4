package io.weightrelay.service.lifecycle;

import java.util.function.ObjLongConsumer;
import java.util.function.Supplier;
import org.slf4j.Logger;

/**
 * A warm-up a service runs at start-up, before readiness (Spring Boot reports ready once the
 * runners returned), so that the JIT's first run of a hot path is not paid by the first request. It
 * is timed for the log, and a failure only costs the warm-up: it is logged, never thrown, so the
 * service still starts.
 */
public final class StartupWarmUp {
    private StartupWarmUp() {}

    /**
     * Runs {@code warmUp}; hands what it returned and the milliseconds it took to {@code done}, or
     * logs {@code warming up <what> failed} on {@code log} when it throws.
     */
    public static <T> void run(
            Logger log, String what, Supplier<T> warmUp, ObjLongConsumer<T> done) {
        long started = System.nanoTime();
        try {
            T result = warmUp.get();
            done.accept(result, (System.nanoTime() - started) / 1_000_000);
        } catch (RuntimeException e) {
            log.warn("warming up {} failed: {}", what, e.toString());
        }
    }
}
