package io.weightrelay.lab.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The rounds the update benches run, on one machine or on several hosts: a cold update, warm-up
 * rounds until the services' JIT has settled (or exactly {@code --warmup} of them), then {@code
 * --repeat} measured rounds, and which of them is the median; how a lab is built and what a round
 * is stay the bench's.
 *
 * @param warmups {@code --warmup}: the warm-up rounds, or empty: until the JIT has settled
 * @param repeat {@code --repeat}: the measured rounds
 */
public record WarmupRounds(OptionalInt warmups, int repeat) {

    /**
     * Without {@code --warmup}: a warm-up round counts as settled when the compiler threads of
     * every process of the lab took at most this share of their CPU during it. Two rounds warmed up
     * the loaders, but control-api, with some 60 requests a round, still spent 0.13 CPU s a round
     * compiling after 20 and 0.03 after 40 (qwen2.5-0.5b, 4 x TP 2, in place), and the update took
     * 1.38 s after 2, 0.95 s after 20 and 0.92 s after 40: the rounds a deployment runs by the
     * thousand are the settled ones.
     */
    static final double SETTLED_JIT_SHARE = 0.03;

    /** Settled warm-up rounds in a row that end the warm-up. */
    static final int SETTLED_ROUNDS = 2;

    /** The most warm-up rounds run without {@code --warmup}, settled or not. */
    static final int MAX_WARMUPS = 60;

    /**
     * The warm-up rounds run without {@code --warmup} where the services cannot be seen (the hosts'
     * services, under their host agents). With two, the shaped-network bench's compat update
     * measured 0.796-0.832 of its prediction, with twelve 0.824-0.829.
     */
    static final int UNSEEN_WARMUPS = 12;

    public WarmupRounds {
        if (warmups.isPresent() && warmups.getAsInt() < 0) {
            throw new IllegalArgumentException(
                    "--warmup must be 0 or more, not " + warmups.getAsInt());
        }
        if (repeat < 1) {
            throw new IllegalArgumentException("--repeat must be 1 or more, not " + repeat);
        }
    }

    /**
     * The rounds both benches measure on {@code lab}: a cold update to the first generation, then
     * warm-up rounds that let the services' JIT settle ({@link #warmups()} of them when given;
     * otherwise until {@link #SETTLED_ROUNDS} rounds in a row are settled, at most {@link
     * #MAX_WARMUPS}, and {@link #UNSEEN_WARMUPS} where {@code services} cannot tell), then {@link
     * #repeat()} measured rounds. Retired generations are collected after every round, as a
     * deployment's scheduled GC would, so the publishers' segments never fill up.
     */
    <U> Rounds<U> run(
            Publish publish,
            Callable<U> updateAll,
            Runnable collectGarbage,
            Supplier<ServiceCpu> services)
            throws Exception {
        publish.step(0);
        U cold = updateAll.call();
        collectGarbage.run();
        int round = 0;
        int settled = 0;
        boolean unseen = false;
        while (warmups.isPresent()
                ? round < warmups.getAsInt()
                : settled < SETTLED_ROUNDS && round < MAX_WARMUPS) {
            publish.step(++round);
            ServiceCpu before = services.get();
            updateAll.call();
            ServiceCpu after = services.get();
            collectGarbage.run();
            double share = ServiceCpu.jitShare(before, after);
            unseen = Double.isNaN(share);
            boolean calm =
                    unseen ? round > UNSEEN_WARMUPS - SETTLED_ROUNDS : share <= SETTLED_JIT_SHARE;
            settled = calm ? settled + 1 : 0;
        }
        int warmed = round;
        List<Measured<U>> measured = new ArrayList<>();
        while (round < warmed + repeat) {
            long generation = publish.step(++round);
            CpuTicks before = CpuTicks.now();
            ServiceCpu servicesBefore = services.get();
            U update = updateAll.call();
            CpuTicks after = CpuTicks.now();
            ServiceCpu servicesAfter = services.get();
            collectGarbage.run();
            double busy = after == null ? Double.NaN : after.busySince(before);
            measured.add(
                    new Measured<>(
                            update,
                            generation,
                            busy,
                            ServiceCpu.spent(servicesBefore, servicesAfter)));
        }
        return new Rounds<>(cold, warmed, !unseen && settled >= SETTLED_ROUNDS, measured);
    }

    /** The trainer of a lab: publishes a step, returns its generation. */
    interface Publish {
        long step(long step) throws Exception;
    }

    /**
     * One measured update, the generation it updated to, the fraction of the machine's cores busy
     * meanwhile ({@link CpuTicks}; NaN where unknown): every process of the lab shares them, and
     * the CPU seconds each role of the lab spent meanwhile, with their JIT's share ({@link
     * ServiceCpu}, as the line's JSON fields).
     */
    record Measured<U>(U update, long generation, double cpuBusy, String servicesCpuJson) {

        /** {@link #cpuBusy} as JSON: a number, or null where unknown. */
        String cpuBusyJson() {
            return Double.isNaN(cpuBusy) ? "null" : String.format(Locale.ROOT, "%.3f", cpuBusy);
        }
    }

    /**
     * The cold update, how many warm-up rounds ran and whether the last {@link #SETTLED_ROUNDS} of
     * them were settled, and the measured updates in order; each update already required to have
     * reached every engine.
     */
    record Rounds<U>(U cold, int warmups, boolean settled, List<Measured<U>> measured) {
        /** The publish step after the last round's. */
        long nextStep() {
            return warmups + measured.size() + 1L;
        }

        /** The generation the last round updated to: what the engines' buffers hold now. */
        long lastGeneration() {
            return measured.get(measured.size() - 1).generation();
        }

        /**
         * The measured round of median duration (the upper one of an even count). One round alone
         * moved by a quarter from run to run on the shared two cores; the median of three is what
         * the machine does, neither its luckiest nor its most disturbed round.
         */
        Measured<U> median(ToDoubleFunction<U> seconds) {
            List<Measured<U>> sorted = new ArrayList<>(measured);
            sorted.sort(Comparator.comparingDouble(m -> seconds.applyAsDouble(m.update())));
            return sorted.get(sorted.size() / 2);
        }

        /** The measured rounds' durations in round order, as a JSON array. */
        String secondsJson(ToDoubleFunction<U> seconds) {
            StringBuilder out = new StringBuilder("[");
            for (Measured<U> m : measured) {
                if (out.length() > 1) {
                    out.append(',');
                }
                out.append(String.format(Locale.ROOT, "%.4f", seconds.applyAsDouble(m.update())));
            }
            return out.append(']').toString();
        }
    }
}
