package io.weightrelay.lab;

import io.weightrelay.reshard.placement.Mode;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Every mode's multi-host run (the demo's {@code runMode}) started at once, each on hosts of its
 * own (a {@code HostLab} run of its own: its own namespaces, bridges, Redis and {@code /dev/shm}),
 * and each mode's test waiting for its own result. A run is mostly waits (services, then agents,
 * each group started after the one before answers; health polls; the updates' round trips), so on
 * two cores two runs side by side take little more than one: MultiHostLabTest measured 198 s so
 * against 366 s one after another, back to back on the shared machine. Each mode's test still gets
 * its own result or its own failure (a run that threw fails that mode's test with the run's
 * exception, the other mode's test is unaffected), so running them side by side hides nothing. The
 * first test to ask starts every mode; {@link #close()} (a class's {@code @AfterAll}) waits until
 * every run has ended and removed its hosts.
 */
final class ModesAtOnce<R> implements AutoCloseable {

    /** One mode's run, as its test would make it alone. */
    @FunctionalInterface
    interface Run<R> {
        R run(Mode mode) throws Exception;
    }

    /** A run ends long before this (a lab's health waits alone allow six minutes). */
    private static final long ALL_ENDED_MINUTES = 30;

    private final Run<R> run;
    private final Map<Mode, Future<R>> runs = new EnumMap<>(Mode.class);
    private ExecutorService pool;

    ModesAtOnce(Run<R> run) {
        this.run = run;
    }

    /** {@code mode}'s result, every mode's run started now if none was; rethrows its failure. */
    R result(Mode mode) throws Exception {
        Future<R> mine;
        synchronized (this) {
            if (pool == null) {
                pool =
                        Executors.newFixedThreadPool(
                                Mode.values().length,
                                r -> {
                                    Thread t = new Thread(r, "modes-at-once");
                                    t.setDaemon(true);
                                    return t;
                                });
                for (Mode m : Mode.values()) {
                    runs.put(m, pool.submit(() -> run.run(m)));
                }
            }
            mine = runs.get(mode);
        }
        try {
            return mine.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            if (e.getCause() instanceof Error cause) {
                throw cause;
            }
            throw e;
        }
    }

    /** Waits until every run has ended (each removes its hosts as it ends). */
    @Override
    public synchronized void close() throws InterruptedException {
        if (pool == null) {
            return;
        }
        pool.shutdown();
        if (!pool.awaitTermination(ALL_ENDED_MINUTES, TimeUnit.MINUTES)) {
            pool.shutdownNow();
            throw new IllegalStateException(
                    String.format(
                            Locale.ROOT,
                            "multi-host runs still going after %d minutes: %s",
                            ALL_ENDED_MINUTES,
                            runs.keySet()));
        }
    }
}
