package io.weightrelay.loader.update;

import static io.weightrelay.loader.update.NamedFailure.CONTROL_API;

import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane;
import io.weightrelay.loader.control.ControlPlane.Barrier;
import io.weightrelay.loader.control.ControlPlane.BarrierState;
import io.weightrelay.loader.control.ControlPlane.Report;
import io.weightrelay.loader.control.ControlPlane.Reported;
import io.weightrelay.loader.control.ControlPlaneException;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.pipeline.ApplyFailure;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One update's session in control-api as this loader takes part in it: its reports, its arrivals at
 * the group's barriers (waited for until the update's deadline, naming who kept a barrier shut),
 * and what the session says when another loader ended it. One per update run. Every report names
 * the session's attempt the prepare joined ({@link #joined}): a session that ended RESUMED_OLD is
 * retried by the group as its next attempt, and control-api refuses a report of an earlier one
 * rather than apply it to the attempt under way.
 */
final class GroupSession {
    private static final Logger log = LoggerFactory.getLogger(GroupSession.class);

    private final ControlPlane control;
    private final LoaderProperties properties;
    private final Instance instance;
    private final SessionKey session;
    private final long deadline;

    /** The session's attempt this run's prepare joined; null until then, or when not counted. */
    private volatile Integer attempt;

    /**
     * @param deadline the update's deadline, on {@link System#nanoTime()}
     */
    GroupSession(
            ControlPlane control,
            LoaderProperties properties,
            Instance instance,
            long generation,
            long deadline) {
        this.control = control;
        this.properties = properties;
        this.instance = instance;
        this.session =
                new SessionKey(new GenerationId(instance.model(), generation), instance.group());
        this.deadline = deadline;
    }

    /** The prepare joined {@code attempt} of the session (null: control-api counts none). */
    void joined(Integer attempt) {
        this.attempt = attempt;
    }

    /** The session's attempt this run takes part in (null: none known). */
    Integer attempt() {
        return attempt;
    }

    /**
     * Reports the phase {@code barrier} waits for and waits until it opens, in one call to
     * control-api (then long-polls it while it stays shut).
     */
    void arrive(Report report, Barrier barrier) {
        BarrierState s = control.arrive(session, report.inAttempt(attempt), barrier, barrierWait());
        while (true) {
            if (s.open()) {
                return;
            }
            if (s.failed()) {
                String peer = s.failedInstance() != null ? s.failedInstance() : CONTROL_API;
                throw new ApplyFailure(
                        peer,
                        "barrier "
                                + barrier.wire()
                                + " failed: "
                                + (s.failure() != null ? s.failure() : peer + " failed"));
            }
            if (System.nanoTime() - deadline >= 0) {
                // Name who kept it shut: a loader that died after its bytes moved is found by no
                // peer's transfer, only by its missing report.
                if (!s.waiting().isEmpty()) {
                    throw new ApplyFailure(
                            s.waiting().get(0),
                            "barrier "
                                    + barrier.wire()
                                    + " did not open in time: no report from "
                                    + String.join(", ", s.waiting()));
                }
                throw new ApplyFailure(
                        CONTROL_API, "barrier " + barrier.wire() + " did not open in time");
            }
            s = control.awaitBarrier(session, barrier, barrierWait());
        }
    }

    /**
     * How long one barrier request may wait: up to the deadline, and no wait at all once it passed
     * (one last look, after which {@link #arrive} names who kept the barrier shut rather than
     * blaming control-api for the time).
     */
    private Duration barrierWait() {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            return Duration.ZERO;
        }
        Duration wait = Duration.ofNanos(left);
        return wait.compareTo(properties.barrierWait()) < 0 ? wait : properties.barrierWait();
    }

    /**
     * The session as {@code barrier}'s status shows it now: touched (so control-api applies a
     * timeout or a participant's end that passed), not waited on.
     */
    BarrierState look(Barrier barrier) {
        return control.awaitBarrier(session, barrier, Duration.ZERO);
    }

    /**
     * As {@link NamedFailure#of}, except for a report control-api refused because the session had
     * already ended (another loader failed it first): this loader's failure is then the session's,
     * naming who failed it and why, not a 409 from control-api. A refusal that names an attempt (a
     * prepare refused while members of the attempt that failed may still act in it, or a report of
     * an attempt that ended) says itself what happened, and stays as control-api said it.
     */
    NamedFailure failure(RuntimeException e) {
        if (e instanceof ControlPlaneException c
                && c.status() == 409
                && "session-closed".equals(c.problemType())
                && (c.problem() == null || c.problem().member("attempt") == null)) {
            try {
                BarrierState s = look(Barrier.PREPARED);
                if (s.failed() && s.failure() != null) {
                    return new NamedFailure(
                            s.failedInstance() != null ? s.failedInstance() : CONTROL_API,
                            "the session ended before this loader's report: " + s.failure());
                }
            } catch (RuntimeException lookup) {
                log.warn("reading why the session ended failed: {}", lookup.toString());
            }
        }
        return NamedFailure.of(instance, e);
    }

    /** Reports a phase no barrier waits on: a failure to report is logged, not fatal. */
    void reportQuietly(Reported phase) {
        try {
            send(Report.of(instance.instanceId(), instance.epoch(), phase));
        } catch (ControlPlaneException e) {
            log.warn("reporting {} failed: {}", phase, e.getMessage());
        }
    }

    /** Reports FAILED naming {@code f}'s peer; a report that does not go through is logged. */
    void reportFailed(NamedFailure f) {
        try {
            send(Report.failed(instance.instanceId(), instance.epoch(), f.peer(), f.message()));
        } catch (RuntimeException e) {
            log.warn("reporting FAILED failed: {}", e.toString());
        }
    }

    /** Sends {@code report}, for this run's attempt of the session. */
    void send(Report report) {
        control.report(session, report.inAttempt(attempt));
    }

    /**
     * While {@code prepared} applies, asks control-api every {@code relay.loader.session-watch}
     * whether the session failed (a touch, so phase timeouts and the liveness of the participants
     * are judged too) and stops the apply, naming the session's failing peer, when it has: a peer
     * that failed or died mid-apply would otherwise leave this loader waiting out its deadline for
     * bytes that never come. Null when watching is off.
     */
    ScheduledFuture<?> watch(UpdateSteps.PreparedUpdate prepared, ScheduledExecutorService on) {
        Duration every = properties.sessionWatch();
        if (every.isZero() || every.isNegative()) {
            return null;
        }
        return on.scheduleWithFixedDelay(
                () -> {
                    try {
                        BarrierState s = look(Barrier.APPLIED);
                        if (s.failed()) {
                            prepared.stop(
                                    new ApplyFailure(
                                            s.failedInstance() != null
                                                    ? s.failedInstance()
                                                    : CONTROL_API,
                                            "the update session failed while this loader applied: "
                                                    + (s.failure() == null
                                                            ? "no reason given"
                                                            : s.failure())));
                        }
                    } catch (RuntimeException e) {
                        // control-api unreachable now: the apply goes on, its deadline still holds
                        log.debug("watching the session failed: {}", e.toString());
                    }
                },
                every.toMillis(),
                every.toMillis(),
                TimeUnit.MILLISECONDS);
    }
}
