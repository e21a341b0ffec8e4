package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabRedis;
import io.weightrelay.reshard.placement.Mode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The one local lab the suite's cases share while a fault leaves it usable: each case borrows it,
 * and a case that cannot prove the lab usable again discards it, so the next case starts a fresh
 * one. Starting a lab is most of a case's time on two cores; sharing it keeps the suite within a
 * few minutes. Two instances, tp 1, compat, two trainer node labels; its own Redis (a private
 * redis-server with an append-only file, which the Redis cases kill and restart) and two
 * control-api instances behind it (every client is given both URLs; the control-api case kills the
 * first).
 */
public final class SharedLab {

    /** A borrowed lab and what the cases published on it. */
    static final class Borrowed {
        final LabCluster lab;

        /** The lab's own Redis. */
        final LabRedis redis;

        /** Every generation committed on this lab, oldest first. */
        final List<Long> committed = new ArrayList<>();

        /** Committed generations a fault destroyed (their publisher killed, a byte flipped). */
        final Set<Long> destroyed = new HashSet<>();

        private long step;

        Borrowed(LabCluster lab, LabRedis redis) {
            this.lab = lab;
            this.redis = redis;
        }

        /** The trainer publishes its next step; the generation is recorded as committed. */
        long publish() {
            long g = lab.publish(step++);
            committed.add(g);
            return g;
        }

        long nextStep() {
            return step++;
        }
    }

    private static final Map<FaultContext, Borrowed> LABS = new HashMap<>();
    private static int started;

    private SharedLab() {}

    /** The context's lab, started on first use. */
    static synchronized Borrowed borrow(FaultContext context) throws Exception {
        Borrowed b = LABS.get(context);
        if (b == null) {
            LabRedis redis = LabRedis.start(context.workDir().resolve("redis-" + started++), true);
            try {
                LabCluster lab =
                        LabCluster.start(
                                redis.serve(LabCluster.Spec.of(context.model(), 2, 1, Mode.COMPAT)),
                                true,
                                2);
                b = new Borrowed(lab, redis);
            } catch (Exception | Error e) {
                redis.close();
                throw e;
            }
            LABS.put(context, b);
        }
        return b;
    }

    /** What a case that drives the shared lab itself proves on it. */
    @FunctionalInterface
    interface Proof {
        FaultResult prove(Borrowed lab, long startedNanos) throws Exception;
    }

    /**
     * Runs {@code proof} on the context's lab; a case that failed (or threw) leaves the lab in a
     * state nobody proved usable, so its logs are dumped and it is discarded.
     */
    static FaultResult prove(FaultContext context, Proof proof) throws Exception {
        long started = System.nanoTime();
        Borrowed b = borrow(context);
        try {
            FaultResult result = proof.prove(b, started);
            if (!result.passed()) {
                b.lab.dumpLogs();
                discard(context);
            }
            return result;
        } catch (Exception | AssertionError e) {
            b.lab.dumpLogs();
            discard(context);
            throw e;
        }
    }

    /** Stops the context's lab (after a case left it in a state it could not repair). */
    public static synchronized void discard(FaultContext context) {
        Borrowed b = LABS.remove(context);
        if (b != null) {
            try {
                b.lab.close();
            } finally {
                b.redis.close();
            }
        }
    }
}
