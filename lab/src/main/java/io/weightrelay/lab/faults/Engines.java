package io.weightrelay.lab.faults;

import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Updates engines together and keeps what each one ended with, including an engine whose loader
 * died under it (its outcome is then the error its REST calls got): unlike {@code
 * LabCluster.update}, one dead loader does not hide the others' outcomes.
 */
final class Engines {

    /** What one engine's update ended with: its progress, or why it has none. */
    record Ended(String instance, UpdateProgress progress, String error) {
        boolean updated() {
            return progress != null && progress.getOutcome() == UpdateOutcome.UPDATED;
        }

        UpdateOutcome outcome() {
            return progress == null ? null : progress.getOutcome();
        }

        String describe() {
            if (progress == null) {
                return instance + ": no outcome (" + error + ")";
            }
            return instance
                    + ": "
                    + progress.getOutcome()
                    + (progress.getError() == null ? "" : " " + progress.getError())
                    + (progress.getFailingPeer() == null
                            ? ""
                            : " (failing peer " + progress.getFailingPeer() + ")");
        }
    }

    /** Running updates of several engines; {@link #await(Duration)} collects them. */
    static final class Running {
        private final ExecutorService pool;
        private final Map<String, Future<Ended>> futures = new LinkedHashMap<>();

        private Running(List<RolloutEngine> engines, Duration timeout) {
            pool = Executors.newFixedThreadPool(engines.size());
            for (RolloutEngine e : engines) {
                futures.put(e.instance(), pool.submit(() -> one(e, timeout)));
            }
        }

        List<Ended> await(Duration wait) throws InterruptedException {
            long deadline = System.nanoTime() + wait.toNanos();
            List<Ended> out = new ArrayList<>();
            try {
                for (Map.Entry<String, Future<Ended>> f : futures.entrySet()) {
                    long left = Math.max(1, deadline - System.nanoTime());
                    try {
                        out.add(f.getValue().get(left, TimeUnit.NANOSECONDS));
                    } catch (java.util.concurrent.TimeoutException e) {
                        out.add(new Ended(f.getKey(), null, "still running after " + wait));
                    } catch (java.util.concurrent.ExecutionException e) {
                        out.add(new Ended(f.getKey(), null, String.valueOf(e.getCause())));
                    }
                }
                return out;
            } finally {
                pool.shutdownNow();
            }
        }
    }

    private Engines() {}

    static Running start(List<RolloutEngine> engines, Duration timeout) {
        return new Running(engines, timeout);
    }

    /** Updates the engines to the active generation and waits for all, at most {@code wait}. */
    static List<Ended> update(List<RolloutEngine> engines, Duration timeout, Duration wait)
            throws InterruptedException {
        return start(engines, timeout).await(wait);
    }

    private static Ended one(RolloutEngine e, Duration timeout) {
        try {
            String id = e.start(null, timeout).getUpdateId();
            return new Ended(e.instance(), e.await(id, Duration.ofMillis(10)), null);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return new Ended(e.instance(), null, "interrupted");
        } catch (RuntimeException ex) {
            return new Ended(e.instance(), null, ex.toString());
        }
    }
}
