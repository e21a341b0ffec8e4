package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class RedisEventsTest {
    private static final String CHANNEL = "relay:events:m:1:lab";

    private final RedisEvents events =
            new RedisEvents(
                    new RedisRecoveryProperties(
                            Duration.ofMillis(20),
                            Duration.ofSeconds(1),
                            Duration.ofMillis(100),
                            Duration.ofSeconds(2),
                            Duration.ofMillis(500),
                            Duration.ofSeconds(5)));

    @Test
    void anEventWakesAWaiterArmedBeforeIt() {
        try (RedisEvents.Waiter waiter = events.waiter(CHANNEL)) {
            events.wake(CHANNEL);
            assertThat(waiter.await(Duration.ofSeconds(5))).isTrue();
            // re-armed: the next event wakes it again, and none is pending
            assertThat(waiter.await(Duration.ofMillis(20))).isFalse();
            events.wake(CHANNEL);
            assertThat(waiter.await(Duration.ofSeconds(5))).isTrue();
        }
    }

    @Test
    void aWaiterIsWokenOnlyByTheEventsItSaysCanMatterToIt() {
        try (RedisEvents.Waiter waiter =
                events.waiter(CHANNEL, message -> !message.equals("PREPARING"))) {
            events.wake(CHANNEL, "PREPARING");
            assertThat(waiter.await(Duration.ofMillis(50))).isFalse();
            events.wake(CHANNEL, "APPLYING");
            assertThat(waiter.await(Duration.ofSeconds(5))).isTrue();
        }
    }

    @Test
    void anEventOnAnotherChannelWakesNobody() {
        try (RedisEvents.Waiter waiter = events.waiter(CHANNEL)) {
            events.wake(CHANNEL + "x");
            assertThat(waiter.await(Duration.ofMillis(50))).isFalse();
        }
    }

    /**
     * A loader's waiter arming while another loader's waiter of the same session leaves (the last
     * one in the channel's set) must still be woken: every barrier has all of a group's loaders
     * doing this at once. Before the arm was atomic with the leave, one round in a few thousand
     * lost its waiter, which then slept out its 5 s recheck with the barrier open.
     */
    @Test
    void aWaiterArmingAsTheLastOtherOneLeavesIsStillWoken() throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            CyclicBarrier start = new CyclicBarrier(2);
            int lost = 0;
            for (int round = 0; round < 50_000; round++) {
                RedisEvents.Waiter leaving = events.waiter(CHANNEL);
                Future<RedisEvents.Waiter> arming =
                        threads.submit(
                                () -> {
                                    start.await();
                                    return events.waiter(CHANNEL);
                                });
                Future<?> closing =
                        threads.submit(
                                () -> {
                                    start.await();
                                    leaving.close();
                                    return null;
                                });
                closing.get();
                try (RedisEvents.Waiter armed = arming.get()) {
                    events.wake(CHANNEL);
                    if (!armed.await(Duration.ofMillis(1))) {
                        lost++;
                    }
                }
            }
            assertThat(lost).as("waiters no event could reach").isZero();
        } finally {
            threads.shutdownNow();
        }
    }
}
