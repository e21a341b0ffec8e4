package io.weightrelay.lab.faults;

import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabRedis;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * Fault case 4: the lab's Redis (a private redis-server with an append-only file, {@code
 * appendfsync always}) is killed with SIGKILL while an update is running and started again on the
 * same port a second later. No service is restarted: control-api, the publishers, the loaders and
 * their data-plane metadata clients must reconnect on their own. The update either completes or
 * ends cleanly (every engine on the generation before or the new one, every byte of it); no
 * committed generation is lost; and the next publish and update work.
 */
public final class RedisRestartCase extends MidUpdateCase {

    /** How long Redis stays dead: long enough for every client to notice the connection gone. */
    static final Duration OUTAGE = Duration.ofSeconds(2);

    public RedisRestartCase() {
        super("redis-restart-aof");
    }

    /**
     * Kills the lab's Redis (SIGKILL) during an update and starts it again after {@link #OUTAGE},
     * with what it saved or, {@code wiped}, with nothing.
     */
    static MidUpdate outage(SharedLab.Borrowed b, Ledger ledger, boolean wiped) throws Exception {
        LabRedis redis = b.redis;
        return MidUpdate.inject(
                b,
                ledger,
                MidUpdate.Fault.of(
                        redis::kill,
                        () -> {
                            Thread.sleep(OUTAGE.toMillis());
                            if (wiped) {
                                redis.restartEmpty();
                            } else {
                                redis.restart();
                            }
                        }));
    }

    @Override
    FaultResult prove(SharedLab.Borrowed b, long started) throws Exception {
        LabCluster lab = b.lab;
        Ledger ledger = new Ledger();
        MidUpdate update = outage(b, ledger, false);
        long good = update.good();
        long next = update.next();
        List<UpdateProgress> outcomes = update.outcomes();
        double recovery = awaitControlApi(lab, good);
        ledger.require(
                recovery >= 0, "control-api did not answer within " + RECOVERY + " of the restart");
        ledger.checkEngines(lab, outcomes);
        ledger.requireHeld(lab, Set.of(good, next));
        ledger.requireCommitted(lab, good, next);

        boolean paused = false;
        for (UpdateProgress p : outcomes) {
            paused |= p.getOutcome() == UpdateOutcome.PAUSED_REBUILD;
        }
        if (paused) {
            // Ended cleanly but paused: the instances are rebuilt, as an operator would.
            lab.reRegisterAll();
        }
        // Not retried: the group's session of this generation ended (RESUMED_OLD), and a session
        // is not started again for the same generation and group while it is kept (24 h); the
        // next generation is what the group updates to.
        long after = ledger.serveNext(lab, b.nextStep());
        ledger.require(after > next, "the next generation " + after + " is not after " + next);
        ledger.requireCommitted(lab, good, next);
        return ledger.result(
                name(),
                update.when("killed")
                        + String.format(
                                java.util.Locale.ROOT,
                                "; control-api served again %.1f s after the restart",
                                recovery)
                        + "; outcomes "
                        + Ledger.ends(outcomes)
                        + "; generations "
                        + good
                        + ", "
                        + next
                        + " kept; next "
                        + after
                        + " served",
                started,
                claimsMidUpdate());
    }

    /** How long control-api may take to serve again once Redis answers (reconnect, breaker). */
    static final Duration RECOVERY = Duration.ofSeconds(30);

    /**
     * How long control-api must keep answering before it counts as serving again: longer than its
     * breaker's open state (2 s), since a half-open probe can succeed and the breaker open once
     * more on a late failure (seen in CI: served 0.8 s after the restart, then 503 "circuit open"
     * for the ledger's reads and the next open).
     */
    static final Duration STEADY = Duration.ofSeconds(3);

    /**
     * Waits until control-api answers reads again on its own, steadily for {@link #STEADY} (it
     * answers 503 while its Redis connection and circuit breaker recover); returns the seconds
     * until the first of those steady answers, or -1.
     */
    static double awaitControlApi(LabCluster lab, long generation) throws InterruptedException {
        long from = System.nanoTime();
        long steadySince = -1;
        while (System.nanoTime() - from < RECOVERY.toNanos()) {
            try {
                lab.generation(generation);
                long now = System.nanoTime();
                if (steadySince < 0) {
                    steadySince = now;
                }
                if (now - steadySince >= STEADY.toNanos()) {
                    return (steadySince - from) / 1e9;
                }
            } catch (RuntimeException stillRecovering) {
                steadySince = -1;
            }
            Thread.sleep(100);
        }
        return -1;
    }
}
