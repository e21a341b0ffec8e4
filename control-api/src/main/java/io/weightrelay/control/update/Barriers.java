package io.weightrelay.control.update;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.control.model.BarrierName;
import io.weightrelay.api.control.model.BarrierStatus;
import io.weightrelay.api.control.model.ParticipantState;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.control.redis.RedisEvents;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.RedisTime;
import io.weightrelay.reshard.manifest.SessionKey;
import io.weightrelay.service.problem.CommonProblems;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.springframework.stereotype.Service;

/**
 * The session's barriers (prepared, sent, applied, post-applied) as loaders long-poll them: whether
 * one opened or failed and who has not reached it, waited for on the session's events and woken by
 * the clock often enough to apply a phase timeout or a dead participant.
 *
 * <p>Every report publishes the session's state on its channel, and every participant waits at each
 * barrier, arriving in one call: a waiter woken by every event would re-read the whole session once
 * for its own report and once for each later arrival, about n²/2 reads of n participants per
 * barrier where n suffice. A barrier other than sent opens or fails only with a change of the
 * session's state (states never come back), so its waiter is woken only by an event that names
 * another state than the one it last read ({@link StateWaiter}); the sent barrier, which opens
 * within APPLYING, is woken by every event.
 */
@Service
public class Barriers {

    /** The most instances a barrier's status names as not arrived yet. */
    static final int WAITING_NAMED = 16;

    private final SessionReads reads;
    private final PhaseReports reports;
    private final RedisEvents events;
    private final RedisKeys keys;
    private final UpdateProperties properties;
    private final Clock clock;
    private final RedisTime time;
    private final MeterRegistry meters;

    Barriers(
            SessionReads reads,
            PhaseReports reports,
            RedisEvents events,
            RedisKeys keys,
            UpdateProperties properties,
            Clock clock,
            RedisTime time,
            MeterRegistry meters) {
        this.reads = reads;
        this.reports = reports;
        this.events = events;
        this.keys = keys;
        this.properties = properties;
        this.clock = clock;
        this.time = time;
        this.meters = meters;
    }

    public BarrierStatus awaitBarrier(SessionKey sessionKey, BarrierName barrier, Duration wait) {
        Instant deadline = clock.instant().plus(wait);
        try (StateWaiter waiter = waiter(sessionKey, barrier)) {
            return await(sessionKey, barrier, deadline, waiter, null);
        }
    }

    /**
     * {@link PhaseReports#report} of the phase {@code barrier} waits for, then {@link
     * #awaitBarrier}, starting from the session the report answered: the loader that arrives last
     * learns that the barrier opened in the call that opened it.
     */
    public BarrierStatus arrive(
            SessionKey sessionKey, BarrierName barrier, PhaseReport report, Duration wait) {
        ReportedPhase expected =
                switch (barrier) {
                    case PREPARED -> ReportedPhase.PREPARED;
                    case SENT -> ReportedPhase.SENT;
                    case APPLIED -> ReportedPhase.APPLIED;
                    case POST_APPLIED -> ReportedPhase.POST_APPLIED;
                };
        if (report.getPhase() != expected) {
            throw CommonProblems.INVALID_REQUEST
                    .exception(
                            "barrier "
                                    + barrier.getValue()
                                    + " is arrived at with a "
                                    + expected.getValue()
                                    + " report, not "
                                    + report.getPhase().getValue())
                    .with("instance", report.getInstance());
        }
        Instant deadline = clock.instant().plus(wait);
        // Listening before the report, so the event of the last arrival is never missed.
        try (StateWaiter waiter = waiter(sessionKey, barrier)) {
            waiter.reading();
            UpdateSession reported = reports.report(sessionKey, report);
            return await(sessionKey, barrier, deadline, waiter, reported);
        }
    }

    /** Waits for {@code barrier}, judging {@code first} (when not null) before reading again. */
    private BarrierStatus await(
            SessionKey sessionKey,
            BarrierName barrier,
            Instant deadline,
            StateWaiter waiter,
            UpdateSession first) {
        UpdateSession known = first;
        // A wake by an event reads the session as the report that published it left it; a wake by
        // the clock touches it first, so a phase timeout that passed, a verifier that died or a
        // participant no longer registered is applied. The clock wakes a waiter at least every
        // livenessEvery for the last. Every participant waits at each barrier: the untouched read
        // saves a script run per waiter when the barrier opens.
        boolean touch = true;
        while (true) {
            if (known == null) {
                waiter.reading();
            }
            UpdateSession session = known != null ? known : reads.read(sessionKey, touch);
            known = null;
            waiter.read(session.getState());
            BarrierStatus status = status(session, barrier);
            Instant now = clock.instant();
            if (status.getOpen() || status.getFailed() || !now.isBefore(deadline)) {
                return status;
            }
            Instant wake = deadline;
            Instant liveness = now.plus(properties.livenessEvery());
            if (liveness.isBefore(wake)) {
                wake = liveness;
            }
            if (session.getPhaseDeadline() != null) {
                // The phase deadline is on the Redis server's clock: how long until it passes is
                // measured on that clock, then waited for on this process's.
                Duration toPhaseEnd =
                        Duration.between(
                                time.now(), session.getPhaseDeadline().toInstant().plusMillis(5));
                Instant phaseEnd = now.plus(toPhaseEnd);
                if (phaseEnd.isBefore(wake)) {
                    wake = phaseEnd;
                }
            }
            touch = !waiter.await(Duration.between(now, wake));
            meters.counter(
                            "relay.updates.barrier.wakes",
                            "model",
                            sessionKey.model(),
                            "by",
                            touch ? "clock" : "event")
                    .increment();
        }
    }

    private StateWaiter waiter(SessionKey sessionKey, BarrierName barrier) {
        return new StateWaiter(
                events, keys.sessionChannel(sessionKey), barrier != BarrierName.SENT);
    }

    static BarrierStatus status(UpdateSession session, BarrierName barrier) {
        int need =
                switch (barrier) {
                    case PREPARED -> 2;
                    case SENT -> 5;
                    case APPLIED -> 6;
                    case POST_APPLIED -> 8;
                };
        int arrived = 0;
        int all = session.getParticipants().size();
        List<String> waiting = new ArrayList<>();
        for (ParticipantState p : session.getParticipants()) {
            boolean reached =
                    barrier == BarrierName.SENT
                            ? Boolean.TRUE.equals(p.getSent())
                            : level(p.getPhase()) >= need;
            if (reached) {
                arrived++;
            } else if (waiting.size() < WAITING_NAMED) {
                waiting.add(p.getInstance());
            }
        }
        SessionState state = session.getState();
        boolean failed = state == SessionState.RESUMED_OLD || state == SessionState.PAUSED_REBUILD;
        boolean open =
                !failed
                        && switch (barrier) {
                            case PREPARED ->
                                    state == SessionState.APPLYING
                                            || state == SessionState.POST_APPLYING
                                            || state == SessionState.DONE;
                            case SENT ->
                                    (state == SessionState.APPLYING && arrived == all)
                                            || state == SessionState.POST_APPLYING
                                            || state == SessionState.DONE;
                            case APPLIED ->
                                    state == SessionState.POST_APPLYING
                                            || state == SessionState.DONE;
                            case POST_APPLIED -> state == SessionState.DONE;
                        };
        BarrierStatus status =
                new BarrierStatus(barrier, open, failed, arrived, session.getParticipants().size());
        status.setState(state);
        status.setFailedInstance(session.getFailedInstance());
        status.setFailure(session.getFailure());
        status.setWaiting(waiting);
        return status;
    }

    /** A participant's progress, twice update-step.lua's level (SENT sits between two). */
    private static int level(UpdatePhase phase) {
        return switch (phase) {
            case PREPARED -> 2;
            case APPLYING -> 4;
            case SENT -> 5;
            case APPLIED -> 6;
            case DONE -> 8;
            default -> 0;
        };
    }
}
