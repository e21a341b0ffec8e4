package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabRedis;
import io.weightrelay.lab.cluster.MultiHostCluster;
import io.weightrelay.reshard.placement.Mode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * The local lab the suite's cases share while a fault leaves it usable: each case borrows it, and a
 * case that cannot prove the lab usable again discards it, so the next case starts a fresh one.
 * Starting a lab is most of a case's time on two cores; sharing it keeps the suite within a few
 * minutes. A case names the {@link Shape} it needs; one lab runs at a time, so borrowing another
 * shape stops the running one (the suite orders its cases so that this happens once). Each lab has
 * its own Redis (a private redis-server with an append-only file, which the Redis cases kill and
 * restart). The multi-host cases share one multi-host lab the same way ({@link BorrowedHosts}); it
 * too is one lab at a time with the local one.
 */
public final class SharedLab {

    /** The labs a case can borrow. */
    enum Shape {
        /**
         * Two instances, tp 1, compat, two trainer node labels, and two control-api instances
         * behind the lab's Redis (every client is given both URLs; the control-api case kills the
         * first).
         */
        COMPAT_PAIR(2, Mode.COMPAT, 2),

        /**
         * Four instances, tp 1, parameter-direct, two on each rollout node label: a read's writes
         * to the other node cross it once, into one delegate, which relays them to its neighbour.
         */
        DIRECT_RELAYS(4, Mode.DIRECT, 1),

        /**
         * As {@link #COMPAT_PAIR} with a single control-api: every client has that one URL and
         * nowhere to fail over to while it is down (the control-api restart case).
         */
        COMPAT_ONE_CONTROL_API(2, Mode.COMPAT, 1),

        /**
         * As {@link #COMPAT_PAIR}, with the first control-api's clock five minutes fast and the
         * second's five minutes slow ({@code relay.clock.skew}), and the publishers and loaders
         * spread over both (each client lists one of them first).
         */
        SKEWED_PAIR(2, Mode.COMPAT, Duration.ofMinutes(5), Duration.ofMinutes(-5));

        private final int instances;
        private final Mode mode;
        private final int controlApis;
        private final List<Duration> skews;

        Shape(int instances, Mode mode, int controlApis) {
            this.instances = instances;
            this.mode = mode;
            this.controlApis = controlApis;
            this.skews = List.of();
        }

        Shape(int instances, Mode mode, Duration... skews) {
            this.instances = instances;
            this.mode = mode;
            this.controlApis = skews.length;
            this.skews = List.of(skews);
        }

        /** Each control-api instance's clock skew (empty: none skewed). */
        List<Duration> skews() {
            return skews;
        }
    }

    /** A borrowed lab and what the cases published on it. */
    static final class Borrowed {
        final LabCluster lab;

        /** The lab's own Redis. */
        final LabRedis redis;

        /** Every generation committed on this lab, oldest first. */
        final List<Long> committed = new ArrayList<>();

        /**
         * Committed generations a fault destroyed (their publisher killed, a byte flipped) or
         * garbage collection removed: none of them need stay committed.
         */
        final Set<Long> destroyed = new HashSet<>();

        /** The shape it was started as. */
        final Shape shape;

        private long step;

        Borrowed(LabCluster lab, LabRedis redis, Shape shape) {
            this.lab = lab;
            this.redis = redis;
            this.shape = shape;
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

    /**
     * The multi-host lab the multi-host cases share (each restores the links it broke and proves
     * the lab serves again before it returns), and the trainer steps published on it: a step opens
     * one generation, so a case publishing on it takes the next step rather than counting from 0.
     */
    static final class BorrowedHosts {
        final MultiHostCluster lab;
        private long step;

        BorrowedHosts(MultiHostCluster lab) {
            this.lab = lab;
        }

        long nextStep() {
            return step++;
        }
    }

    private static final Map<FaultContext, Borrowed> LABS = new HashMap<>();
    private static final Map<FaultContext, BorrowedHosts> HOSTS = new HashMap<>();
    private static int started;

    private SharedLab() {}

    /** The context's two-instance compat lab, started on first use. */
    static Borrowed borrow(FaultContext context) throws Exception {
        return borrow(context, Shape.COMPAT_PAIR);
    }

    /** The context's lab of {@code shape}, started on first use (stopping one of another shape). */
    static synchronized Borrowed borrow(FaultContext context, Shape shape) throws Exception {
        Borrowed b = LABS.get(context);
        if (b != null && b.shape != shape) {
            discard(context);
            b = null;
        }
        if (b == null) {
            discardHosts(context);
            LabRedis redis = LabRedis.start(context.workDir().resolve("redis-" + started++), true);
            try {
                LabCluster.Spec spec =
                        redis.serve(
                                LabCluster.Spec.of(
                                        context.model(), shape.instances, 1, shape.mode));
                LabCluster lab =
                        shape.skews.isEmpty()
                                ? LabCluster.start(spec, true, shape.controlApis)
                                : LabCluster.startWithSkewedControlApis(spec, true, shape.skews);
                b = new Borrowed(lab, redis, shape);
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
        return prove(context, Shape.COMPAT_PAIR, proof);
    }

    /** As {@link #prove(FaultContext, Proof)}, on the context's lab of {@code shape}. */
    static FaultResult prove(FaultContext context, Shape shape, Proof proof) throws Exception {
        long started = System.nanoTime();
        Borrowed b = borrow(context, shape);
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

    /**
     * The context's multi-host lab, started by {@code start} on first use (stopping the local lab:
     * one lab at a time).
     */
    static synchronized BorrowedHosts borrowHosts(
            FaultContext context, Callable<MultiHostCluster> start) throws Exception {
        BorrowedHosts h = HOSTS.get(context);
        if (h == null) {
            discardLocal(context);
            h = new BorrowedHosts(start.call());
            HOSTS.put(context, h);
        }
        return h;
    }

    /**
     * Stops the context's lab, local or multi-host (after a case left it in a state it could not
     * repair, or at the end of the suite).
     */
    public static synchronized void discard(FaultContext context) {
        try {
            discardLocal(context);
        } finally {
            discardHosts(context);
        }
    }

    private static void discardLocal(FaultContext context) {
        Borrowed b = LABS.remove(context);
        if (b != null) {
            try {
                b.lab.close();
            } finally {
                b.redis.close();
            }
        }
    }

    private static void discardHosts(FaultContext context) {
        BorrowedHosts h = HOSTS.remove(context);
        if (h != null) {
            h.lab.close();
        }
    }
}
