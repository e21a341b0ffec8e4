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
        /** Every loader of the group fetched and verified; waiting for the engine's install. */
        FETCHED,
        INSTALLING,
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
            Split split,
            String failingPeer,
            String error) {}

    /**
     * The update seen as fetch and install, in milliseconds (null until known): fetch from the
     * start to the group's consensus that every loader fetched and verified; install from the
     * engine's install call (or, installed with the update, from the end of the fetch) to the end;
     * pause, what the engine spends paused as the loader sees it: the install when installed on
     * request, the whole update otherwise (that engine drained before it started).
     */
    public record Split(Long fetchMs, Long installMs, Long pauseMs) {}

    private final String id;
    private final long generation;
    private final Long previousGeneration;
    private final boolean installOnRequest;
    private final long startedAt = System.nanoTime();
    private long fetchedAt;
    private long installFrom;
    private long endedAt;
    private boolean installRequested;
    private String declined;
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
        this(id, generation, previousGeneration, false);
    }

    /**
     * @param installOnRequest the update stops at {@link Phase#FETCHED} until the engine calls
     *     {@link #requestInstall()}; otherwise it installs as soon as the group fetched
     */
    UpdateRun(String id, long generation, Long previousGeneration, boolean installOnRequest) {
        this.id = id;
        this.generation = generation;
        this.previousGeneration = previousGeneration;
        this.installOnRequest = installOnRequest;
    }

    public boolean installOnRequest() {
        return installOnRequest;
    }

    /** The group fetched and verified: the fetch ends here. */
    synchronized void fetched() {
        fetchedAt = System.nanoTime();
        installFrom = fetchedAt;
        if (installOnRequest) {
            enter(Phase.FETCHED);
            notifyAll();
        }
    }

    /**
     * The engine drained and asks to install.
     *
     * @throws IllegalStateException when the update is not waiting at {@link Phase#FETCHED}
     */
    public synchronized void requestInstall() {
        refuseUnlessWaitingForTheEngine();
        installRequested = true;
        installFrom = System.nanoTime();
        notifyAll();
    }

    /**
     * The engine cannot install the fetched update (its own weight-update session was refused,
     * say): the update ends {@link Outcome#RESUMED_OLD} now, naming {@code reason}, rather than
     * holding its group until the deadline.
     *
     * @throws IllegalStateException when the update is not waiting at {@link Phase#FETCHED}
     */
    public synchronized void decline(String reason) {
        refuseUnlessWaitingForTheEngine();
        declined = reason == null || reason.isBlank() ? "no reason given" : reason.strip();
        notifyAll();
    }

    private void refuseUnlessWaitingForTheEngine() {
        if (!installOnRequest || phase != Phase.FETCHED || installRequested || declined != null) {
            throw new IllegalStateException(
                    "update "
                            + id
                            + (!installOnRequest
                                    ? " installs with the update, not on request"
                                    : declined != null
                                            ? " was declined by the engine (" + declined + ")"
                                            : installRequested
                                                    ? " is installing already"
                                                    : " is " + phase + ", not FETCHED"));
        }
    }

    /**
     * Waits until the engine asks to install or declines, or until {@code deadline} (on {@link
     * System#nanoTime()}).
     *
     * @return whether it answered in time ({@link #declined()} tells which way)
     */
    synchronized boolean awaitInstallRequest(long deadline) throws InterruptedException {
        while (!installRequested && declined == null) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    /** Why the engine declined the fetched update, or null while it has not. */
    synchronized String declined() {
        return declined;
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

    /**
     * The timed phases: prepare (with its barrier), apply (with its barrier), install, post-apply;
     * the wait at {@link Phase#FETCHED} is the engine's, not timed.
     */
    private static Phase timedPhase(Phase p) {
        return switch (p) {
            case PREPARING, PREPARED -> Phase.PREPARING;
            case APPLYING, APPLIED -> Phase.APPLYING;
            case INSTALLING -> Phase.INSTALLING;
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
        endedAt = System.nanoTime();
        outcome = result;
        failingPeer = peer;
        error = message;
        notifyAll();
    }

    /**
     * The snapshot once the run has an outcome or waits at {@link Phase#FETCHED} for the engine, or
     * when {@code wait} has passed, whichever is first: a long poll for an engine following its
     * update.
     */
    public synchronized Snapshot awaitOutcome(Duration wait) throws InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (outcome == Outcome.RUNNING
                && !(phase == Phase.FETCHED && !installRequested && declined == null)) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return snapshot();
    }

    private Split split() {
        return endedAt == 0 ? new Split(fetchMs(), null, null) : splitUntil(endedAt);
    }

    /** The split as if the update ended now: what its POST_APPLIED report carries. */
    synchronized Split splitSoFar() {
        return splitUntil(System.nanoTime());
    }

    private Long fetchMs() {
        return fetchedAt == 0 ? null : ms(fetchedAt - startedAt);
    }

    private Split splitUntil(long end) {
        Long install = fetchedAt == 0 ? null : ms(end - installFrom);
        long pause =
                installOnRequest
                        ? (installRequested ? ms(end - installFrom) : 0L)
                        : ms(end - startedAt);
        return new Split(fetchMs(), install, pause);
    }

    private static long ms(long nanos) {
        return nanos / 1_000_000;
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
                split(),
                failingPeer,
                error);
    }
}
