package io.weightrelay.lab.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.function.DoubleSupplier;

/**
 * The one measurement loop of {@code ./relay bench dataplane}, whatever the engine and wherever its
 * two ends run: a figure is a {@link Round} that moves its bytes once and says how long it took.
 * Figures measured together get one warm-up round each, then take turns, round after round, so an
 * engine and its yardstick see the same load from whatever else runs on the machine; a figure is
 * the median of its rounds, in GB/s (10^9 bytes per second).
 */
final class DataplaneRounds {

    private DataplaneRounds() {}

    /** One round of a figure: moves its bytes once and returns the seconds that took. */
    @FunctionalInterface
    interface Round {
        double seconds() throws Exception;

        /** A round timed here, around {@code transfer}, which returns once its bytes landed. */
        static Round timed(Runnable transfer) {
            return () -> {
                long t0 = System.nanoTime();
                transfer.run();
                return (System.nanoTime() - t0) / 1e9;
            };
        }

        /** A round of a yardstick that times itself in native code: GB/s of {@code bytes}. */
        static Round ofRate(long bytes, DoubleSupplier gbps) {
            return () -> bytes / (gbps.getAsDouble() * 1e9);
        }
    }

    /**
     * The seconds of every measured round of each figure, in the order the figures were given.
     *
     * @param bytes what one round of every figure moves
     * @param seconds per figure, its rounds in order
     */
    record Rates(long bytes, double[][] seconds) {

        /** The median of figure {@code k}'s round rates, GB/s. */
        double gbps(int k) {
            return median(rounds(k));
        }

        /** The median of figure {@code k}'s round times, in microseconds. */
        double micros(int k) {
            return median(Arrays.stream(seconds[k]).map(s -> s * 1e6).toArray());
        }

        /** Figure {@code k}'s round rates as a JSON array, GB/s. */
        String roundsJson(int k) {
            StringBuilder b = new StringBuilder("[");
            double[] rates = rounds(k);
            for (int i = 0; i < rates.length; i++) {
                b.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.3f", rates[i]));
            }
            return b.append(']').toString();
        }

        private double[] rounds(int k) {
            return Arrays.stream(seconds[k]).map(s -> bytes / s / 1e9).toArray();
        }
    }

    /** One warm-up round of each figure, then {@code repeats} rounds of them in turn. */
    static Rates interleaved(int repeats, long bytes, Round... figures) throws Exception {
        warmUp(figures);
        return measured(repeats, bytes, figures);
    }

    /** One round of each figure, not measured: connections, mappings and JIT warm. */
    static void warmUp(Round... figures) throws Exception {
        for (Round figure : figures) {
            figure.seconds();
        }
    }

    /** {@code repeats} measured rounds of the figures in turn, after their {@link #warmUp}. */
    static Rates measured(int repeats, long bytes, Round... figures) throws Exception {
        double[][] seconds = new double[figures.length][repeats];
        for (int i = 0; i < repeats; i++) {
            for (int k = 0; k < figures.length; k++) {
                seconds[k][i] = figures[k].seconds();
            }
        }
        return new Rates(bytes, seconds);
    }

    /** A figure measured alone: one warm-up, then the median of {@code repeats} rounds, GB/s. */
    static double gbps(int repeats, long bytes, Round figure) throws Exception {
        return interleaved(repeats, bytes, figure).gbps(0);
    }

    /** The median of {@code values} (the mean of the middle two of an even count). */
    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
