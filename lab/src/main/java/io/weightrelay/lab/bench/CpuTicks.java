package io.weightrelay.lab.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The machine's CPU time so far, all cores together, from the first line of {@code /proc/stat}:
 * what the update benches read around each round to say whether the machine's cores, not the
 * design, set the round's time ({@link #busySince}).
 *
 * @param busy ticks spent in user, nice, system, irq, softirq and steal
 * @param total busy ticks plus idle and iowait
 */
record CpuTicks(long busy, long total) {

    private static final Path PROC_STAT = Path.of("/proc/stat");

    /** Now, or null where there is no {@code /proc/stat}. */
    static CpuTicks now() {
        try {
            return parse(Files.readAllLines(PROC_STAT).get(0));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** The aggregate line of {@code /proc/stat} ({@code cpu user nice system idle ...}). */
    static CpuTicks parse(String line) {
        String[] f = line.trim().split("\\s+");
        if (!f[0].equals("cpu") || f.length < 9) {
            throw new IllegalArgumentException("not the aggregate cpu line of /proc/stat: " + line);
        }
        long user = Long.parseLong(f[1]);
        long nice = Long.parseLong(f[2]);
        long system = Long.parseLong(f[3]);
        long idle = Long.parseLong(f[4]);
        long iowait = Long.parseLong(f[5]);
        long irq = Long.parseLong(f[6]);
        long softirq = Long.parseLong(f[7]);
        long steal = Long.parseLong(f[8]);
        long busy = user + nice + system + irq + softirq + steal;
        return new CpuTicks(busy, busy + idle + iowait);
    }

    /**
     * The fraction of the machine's cores busy between {@code before} and this reading, or NaN when
     * either is missing or no tick passed.
     */
    double busySince(CpuTicks before) {
        if (before == null || total <= before.total) {
            return Double.NaN;
        }
        return (double) (busy - before.busy) / (total - before.total);
    }
}
