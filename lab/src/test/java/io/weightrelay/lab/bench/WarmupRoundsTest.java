package io.weightrelay.lab.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** How many warm-up rounds the update bench runs before it measures. */
class WarmupRoundsTest {

    /** A round that spends 100 ticks, {@code jitPercent} of them compiling. */
    private static Supplier<ServiceCpu> rounds(int... jitPercent) {
        List<ServiceCpu> readings = new ArrayList<>();
        long total = 0;
        long jit = 0;
        for (int percent : jitPercent) {
            readings.add(reading(total, jit));
            total += 100;
            jit += percent;
            readings.add(reading(total, jit));
        }
        return new Supplier<>() {
            private int next;

            @Override
            public ServiceCpu get() {
                // past the script: rounds that compile nothing
                return next < readings.size()
                        ? readings.get(next++)
                        : reading(1_000_000 + next++, jitPercent.length);
            }
        };
    }

    private static ServiceCpu reading(long total, long jit) {
        return new ServiceCpu(Map.of("control-api", new long[] {total, jit}));
    }

    private static WarmupRounds.Rounds<Long> run(OptionalInt warmups, Supplier<ServiceCpu> cpu)
            throws Exception {
        List<Long> steps = new ArrayList<>();
        WarmupRounds.Rounds<Long> rounds =
                new WarmupRounds(warmups, 3)
                        .run(
                                step -> {
                                    steps.add(step);
                                    return step + 1;
                                },
                                () -> (long) steps.size(),
                                () -> {},
                                cpu);
        // one publish per round, in order, the cold one first
        assertThat(steps).hasSize(rounds.warmups() + 4);
        for (int i = 0; i < steps.size(); i++) {
            assertThat(steps.get(i)).isEqualTo(i);
        }
        assertThat(rounds.nextStep()).isEqualTo(steps.size());
        assertThat(rounds.measured()).hasSize(3);
        assertThat(rounds.lastGeneration()).isEqualTo(steps.size());
        return rounds;
    }

    @Test
    void byDefaultTheWarmUpEndsAfterTwoRoundsInARowThatCompiledAtMostThreePercent()
            throws Exception {
        WarmupRounds.Rounds<Long> rounds = run(OptionalInt.empty(), rounds(50, 10, 2, 10, 1, 3));

        assertThat(rounds.warmups()).isEqualTo(6);
        assertThat(rounds.settled()).isTrue();
    }

    @Test
    void aJitThatNeverSettlesStopsTheWarmUpAtItsLimit() throws Exception {
        int[] busy = new int[WarmupRounds.MAX_WARMUPS + 5];
        java.util.Arrays.fill(busy, 4);
        WarmupRounds.Rounds<Long> rounds = run(OptionalInt.empty(), rounds(busy));

        assertThat(rounds.warmups()).isEqualTo(WarmupRounds.MAX_WARMUPS);
        assertThat(rounds.settled()).isFalse();
    }

    @Test
    void whereTheServicesCannotBeSeenAFixedNumberOfRoundsWarmUpAndNoneCountsAsSettled()
            throws Exception {
        WarmupRounds.Rounds<Long> rounds = run(OptionalInt.empty(), () -> null);

        assertThat(rounds.warmups()).isEqualTo(WarmupRounds.UNSEEN_WARMUPS).isEqualTo(12);
        assertThat(rounds.settled()).isFalse();
    }

    @Test
    void aGivenWarmUpRunsExactlyThatManyRoundsAndSaysWhetherTheyHadSettled() throws Exception {
        assertThat(run(OptionalInt.of(0), rounds()).warmups()).isZero();
        WarmupRounds.Rounds<Long> busy = run(OptionalInt.of(3), rounds(50, 40, 30, 0, 0));
        assertThat(busy.warmups()).isEqualTo(3);
        assertThat(busy.settled()).isFalse();
        WarmupRounds.Rounds<Long> calm = run(OptionalInt.of(3), rounds(50, 1, 0));
        assertThat(calm.settled()).isTrue();
    }
}
