package io.weightrelay.loader.update;

import io.weightrelay.loader.pipeline.ApplyCounts;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/** One update's progress and outcome; written by the update thread, read by the web layer. */
public final class UpdateRun {

    /** Where the update stands. */
    public enum Phase {
        PREPARING,
        PREPARED,
        APPLYING,
        APPLIED,
        POST_APPLYING,
        DONE,
        RESUMED_OLD,
        PAUSED_REBUILD
    }

    /** How it ended. */
    public enum Outcome {
        RUNNING,
        UPDATED,
        RESUMED_OLD,
        PAUSED_REBUILD
    }

    /** A consistent view. */
    public record Snapshot(
            String id,
            long generation,
            Long previousGeneration,
            Phase phase,
            Outcome outcome,
            long bytesDone,
            long bytesTotal,
            ApplyCounts counts,
            Map<Phase, Long> durationsMs,
            String failingPeer,
            String error) {}

    private final String id;
    private final long generation;
    private final Long previousGeneration;
    private final AtomicLong bytesDone = new AtomicLong();
    private final Map<Phase, Long> durations = new EnumMap<>(Phase.class);
    private Phase phase = Phase.PREPARING;
    private long phaseStart = System.nanoTime();
    private Outcome outcome = Outcome.RUNNING;
    private long bytesTotal;
    private ApplyCounts counts;
    private String failingPeer;
    private String error;

    UpdateRun(String id, long generation, Long previousGeneration) {
        this.id = id;
        this.generation = generation;
        this.previousGeneration = previousGeneration;
    }

    public String id() {
        return id;
    }

    public long generation() {
        return generation;
    }

    synchronized void enter(Phase next) {
        long now = System.nanoTime();
        Phase timed = timedPhase(phase);
        if (timed != null && timedPhase(next) != timed) {
            durations.merge(timed, (now - phaseStart) / 1_000_000, Long::sum);
            phaseStart = now;
        } else if (timed == null) {
            phaseStart = now;
        }
        phase = next;
    }

    /** The three timed phases: prepare (with its barrier), apply (with its barrier), post-apply. */
    private static Phase timedPhase(Phase p) {
        return switch (p) {
            case PREPARING, PREPARED -> Phase.PREPARING;
            case APPLYING, APPLIED -> Phase.APPLYING;
            case POST_APPLYING -> Phase.POST_APPLYING;
            default -> null;
        };
    }

    synchronized void total(long bytes) {
        bytesTotal = bytes;
    }

    void progress(long bytes) {
        bytesDone.addAndGet(bytes);
    }

    synchronized void counts(ApplyCounts value) {
        counts = value;
    }

    synchronized void finish(Outcome result, Phase last, String peer, String message) {
        enter(last);
        outcome = result;
        failingPeer = peer;
        error = message;
        notifyAll();
    }

    /**
     * The snapshot once the run has an outcome, or when {@code wait} has passed, whichever is
     * first: a long poll for an engine following its update.
     */
    public synchronized Snapshot awaitOutcome(Duration wait) throws InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (outcome == Outcome.RUNNING) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return snapshot();
    }

    public synchronized Snapshot snapshot() {
        return new Snapshot(
                id,
                generation,
                previousGeneration,
                phase,
                outcome,
                bytesDone.get(),
                bytesTotal,
                counts,
                Map.copyOf(durations),
                failingPeer,
                error);
    }
}
