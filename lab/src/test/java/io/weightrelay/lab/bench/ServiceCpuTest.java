package io.weightrelay.lab.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ServiceCpuTest {

    /** A thread's stat line as Linux writes it, utime 1234 and stime 56 (fields 14 and 15). */
    private static final String COMPILER_THREAD =
            "4242 (C2 CompilerThre) S 4200 4200 4200 0 -1 4194368 10 0 0 0 1234 56 0 0 20 0 40"
                    + " 0 100 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 -1 1 0 0 0 0 0";

    @Test
    void theTimesAreCountedAfterACommandNameWithSpacesAndParentheses() {
        assertThat(ServiceCpu.parseTicks(COMPILER_THREAD)).isEqualTo(1290);
        assertThat(ServiceCpu.command(COMPILER_THREAD)).isEqualTo("C2 CompilerThre");
        String odd = COMPILER_THREAD.replace("(C2 CompilerThre)", "(a) b (c)");
        assertThat(ServiceCpu.command(odd)).isEqualTo("a) b (c");
        assertThat(ServiceCpu.parseTicks(odd)).isEqualTo(1290);
    }

    @Test
    void spentIsEachRolesSecondsBetweenTwoReadings() {
        Map<String, long[]> before = new LinkedHashMap<>();
        before.put("control-api", new long[] {1000, 300});
        before.put("loaders", new long[] {5000, 100});
        Map<String, long[]> after = new LinkedHashMap<>();
        after.put("control-api", new long[] {1042, 325});
        after.put("loaders", new long[] {5150, 104});

        assertThat(ServiceCpu.spent(new ServiceCpu(before), new ServiceCpu(after)))
                .isEqualTo(
                        "\"cpu_s\":{\"control-api\":0.42,\"loaders\":1.50},"
                                + "\"jit_cpu_s\":{\"control-api\":0.25,\"loaders\":0.04}");
        assertThat(ServiceCpu.spent(null, new ServiceCpu(after)))
                .isEqualTo("\"cpu_s\":null,\"jit_cpu_s\":null");
    }

    @Test
    void thisJvmsOwnTimeAndItsCompilersAreRead() {
        Map<String, List<Long>> roles = Map.of("bench", List.of(ProcessHandle.current().pid()));
        ServiceCpu before = ServiceCpu.now(roles);
        assertThat(before).as("/proc on Linux").isNotNull();
        // 0.3 s of this thread's own CPU time, however busy the machine: 30 ticks of the process,
        // less what rounding to ticks takes
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long until = threads.getCurrentThreadCpuTime() + 300_000_000L;
        long x = 0;
        while (threads.getCurrentThreadCpuTime() < until) {
            for (int i = 0; i < 10_000; i++) {
                x += x * 31 + 7;
            }
        }
        ServiceCpu after = ServiceCpu.now(roles);
        assertThat(after.ticks().get("bench")[0] - before.ticks().get("bench")[0])
                .as("spun " + x)
                .isGreaterThanOrEqualTo(20);
        // the JVM has compiled something by now: its compiler threads have a time, within the total
        assertThat(after.ticks().get("bench")[1])
                .isGreaterThan(0)
                .isLessThanOrEqualTo(after.ticks().get("bench")[0]);
    }
}
