package io.weightrelay.lab.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * CPU time the lab's processes have used so far, by role ({@code control-api}, {@code publishers},
 * {@code loaders}, {@code bench}): each role's total, user and system, threads that have ended
 * included ({@code /proc/<pid>/stat}), and the part of it the JVMs' JIT compiler threads took
 * ({@code /proc/<pid>/task/<tid>/stat} of the threads named {@code C1 CompilerThread} and {@code C2
 * CompilerThread}; a compiler thread the JVM ended meanwhile is not counted). On two cores shared
 * by seven JVMs, where a round's time goes is as much a finding as the round's time: the update
 * bench reads it around every measured round ({@link #spent}).
 *
 * @param ticks each role's {total, jit} in clock ticks
 */
record ServiceCpu(Map<String, long[]> ticks) {

    /** Linux's USER_HZ, the unit of the times in {@code /proc}: 100 on every Linux port in use. */
    private static final double TICKS_PER_SECOND = 100.0;

    private static final Path PROC = Path.of("/proc");

    /** The processes of each role, now; null where there is no {@code /proc}. */
    static ServiceCpu now(Map<String, List<Long>> pidsByRole) {
        if (!Files.isDirectory(PROC.resolve("self"))) {
            return null;
        }
        Map<String, long[]> out = new LinkedHashMap<>();
        pidsByRole.forEach(
                (role, pids) -> {
                    long[] sum = new long[2];
                    for (long pid : pids) {
                        Path dir = PROC.resolve(Long.toString(pid));
                        sum[0] += ticks(dir.resolve("stat"));
                        sum[1] += compilerTicks(dir.resolve("task"));
                    }
                    out.put(role, sum);
                });
        return new ServiceCpu(out);
    }

    /**
     * The CPU seconds each role spent from {@code before} to {@code after}, total and JIT, as two
     * JSON fields ({@code "cpu_s":{...},"jit_cpu_s":{...}}); both null when either reading is
     * missing.
     */
    static String spent(ServiceCpu before, ServiceCpu after) {
        if (before == null || after == null) {
            return "\"cpu_s\":null,\"jit_cpu_s\":null";
        }
        return after.spentSince(before);
    }

    /**
     * The share of the CPU every role spent from {@code before} to {@code after} that went to JIT
     * compiler threads; NaN when either reading is missing or no CPU was spent.
     */
    static double jitShare(ServiceCpu before, ServiceCpu after) {
        if (before == null || after == null) {
            return Double.NaN;
        }
        long total = 0;
        long jit = 0;
        for (Map.Entry<String, long[]> e : after.ticks.entrySet()) {
            long[] then = before.ticks.getOrDefault(e.getKey(), new long[2]);
            total += e.getValue()[0] - then[0];
            jit += e.getValue()[1] - then[1];
        }
        return total <= 0 ? Double.NaN : (double) Math.max(0, jit) / total;
    }

    private String spentSince(ServiceCpu before) {
        StringBuilder total = new StringBuilder("{");
        StringBuilder jit = new StringBuilder("{");
        ticks.forEach(
                (role, now) -> {
                    long[] then = before.ticks.getOrDefault(role, new long[2]);
                    append(total, role, now[0] - then[0]);
                    append(jit, role, now[1] - then[1]);
                });
        return "\"cpu_s\":" + total.append('}') + ",\"jit_cpu_s\":" + jit.append('}');
    }

    private static void append(StringBuilder out, String role, long ticks) {
        if (out.length() > 1) {
            out.append(',');
        }
        out.append('"')
                .append(role)
                .append("\":")
                .append(String.format(Locale.ROOT, "%.2f", Math.max(0, ticks) / TICKS_PER_SECOND));
    }

    /** utime + stime of one {@code stat} file; 0 for a process or thread that is gone. */
    static long ticks(Path stat) {
        try {
            return parseTicks(Files.readString(stat));
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /**
     * utime + stime of a {@code stat} line: fields 14 and 15, counted after the command name, which
     * is in parentheses and may itself hold spaces and parentheses.
     */
    static long parseTicks(String stat) {
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** The command name of a {@code stat} line. */
    static String command(String stat) {
        return stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    }

    private static long compilerTicks(Path tasks) {
        long sum = 0;
        try (DirectoryStream<Path> threads = Files.newDirectoryStream(tasks)) {
            for (Path thread : threads) {
                try {
                    String stat = Files.readString(thread.resolve("stat"));
                    String name = command(stat);
                    if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
                        sum += parseTicks(stat);
                    }
                } catch (IOException | RuntimeException e) {
                    // the thread ended between the listing and the read
                }
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return sum;
    }
}
