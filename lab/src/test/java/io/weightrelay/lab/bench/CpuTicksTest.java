package io.weightrelay.lab.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class CpuTicksTest {

    @Test
    void busyIsEverythingButIdleAndIowait() {
        CpuTicks before = CpuTicks.parse("cpu  100 0 50 800 50 0 0 0 0 0");
        CpuTicks after = CpuTicks.parse("cpu  250 10 100 860 60 5 5 20 0 0");
        // busy 150 -> 390 (+240), total 1000 -> 1310 (+310)
        assertThat(after.busySince(before)).isCloseTo(240.0 / 310.0, within(1e-9));
    }

    @Test
    void withoutABeforeOrATickThereIsNoFraction() {
        CpuTicks t = CpuTicks.parse("cpu  1 2 3 4 5 6 7 8 9 10");
        assertThat(t.busySince(null)).isNaN();
        assertThat(t.busySince(t)).isNaN();
    }

    @Test
    void aLineThatIsNotTheAggregateIsRefusedNamingIt() {
        assertThatThrownBy(() -> CpuTicks.parse("cpu0 1 2 3 4 5 6 7 8"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cpu0");
    }

    @Test
    void thisMachineBusiesItselfWhileSpinning() {
        CpuTicks before = CpuTicks.now();
        assertThat(before).as("/proc/stat on Linux").isNotNull();
        long until = System.nanoTime() + 300_000_000L;
        long x = 0;
        while (System.nanoTime() < until) {
            x += x * 31 + 7;
        }
        double busy = CpuTicks.now().busySince(before);
        assertThat(busy).as("spun " + x).isGreaterThan(0.0).isLessThanOrEqualTo(1.0);
    }
}
