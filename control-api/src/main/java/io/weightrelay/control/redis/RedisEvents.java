package io.weightrelay.control.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import org.springframework.data.redis.connection.Message;
import org.springframework.data.redis.listener.PatternTopic;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;
import org.springframework.stereotype.Component;

/**
 * Wakes long-polls when something they wait for may have changed. One pattern subscription per
 * instance; local waiters are keyed by channel. Callers follow the pattern {@code w =
 * waiter(channel); check state; if not done w.await(timeout); repeat}, so an event published
 * between the check and the wait is never lost. An event is only a hint: the waiter re-reads the
 * state, and no wait is longer than {@link RedisRecoveryProperties#recheck}, so a message dropped
 * during a Redis outage costs at most that. A waiter may say which events can matter to it by their
 * message ({@link #waiter(String, Predicate)}): the others pass it by, so a long poll that only a
 * change of state can end is not woken, and does not re-read, on every event of its channel.
 */
@Component
public final class RedisEvents {

    private final Map<String, Set<Armed>> waiters = new ConcurrentHashMap<>();
    private final Duration recheck;

    RedisEvents(RedisRecoveryProperties recovery) {
        this.recheck = recovery.recheck();
    }

    void subscribe(RedisMessageListenerContainer container, RedisKeys keys) {
        container.addMessageListener(this::onMessage, new PatternTopic(keys.eventPattern()));
    }

    private void onMessage(Message message, byte[] pattern) {
        wake(
                new String(message.getChannel(), StandardCharsets.UTF_8),
                new String(message.getBody(), StandardCharsets.UTF_8));
    }

    /** Wakes this instance's waiters of {@code channel}, as an event on it does. */
    void wake(String channel) {
        wake(channel, "");
    }

    /**
     * Wakes this instance's waiters of {@code channel} that {@code message}, an event's message on
     * it, can matter to.
     */
    void wake(String channel, String message) {
        Set<Armed> set = waiters.get(channel);
        if (set != null) {
            for (Armed armed : set) {
                if (armed.wakesOn().test(message)) {
                    armed.future().complete(null);
                }
            }
        }
    }

    /** Registers interest in every event of a channel; close it when done. */
    public Waiter waiter(String channel) {
        return new Waiter(channel, message -> true);
    }

    /**
     * Registers interest in the events of a channel whose message passes {@code wakesOn} (called on
     * the thread that delivers events: quick, and safe to call while the waiter's own thread runs);
     * close it when done.
     */
    public Waiter waiter(String channel, Predicate<String> wakesOn) {
        return new Waiter(channel, wakesOn);
    }

    /** One arming of a waiter: its future and the events that complete it. */
    private record Armed(CompletableFuture<Void> future, Predicate<String> wakesOn) {}

    /** One registration; not thread safe, use from the waiting thread. */
    public final class Waiter implements AutoCloseable {
        private final String channel;
        private final Predicate<String> wakesOn;
        private Armed armed;

        private Waiter(String channel, Predicate<String> wakesOn) {
            this.channel = channel;
            this.wakesOn = wakesOn;
            arm();
        }

        /**
         * Adds a fresh future to the channel's set inside the map's compute, as {@link #disarm}
         * removes one: adding after a {@code computeIfAbsent} returned could land in a set that
         * another waiter's disarm had just emptied and dropped from the map, where no event ever
         * finds it (a barrier's waiter then slept until its recheck, 5 s, with the barrier open).
         */
        private void arm() {
            Armed fresh = new Armed(new CompletableFuture<>(), wakesOn);
            armed = fresh;
            waiters.compute(
                    channel,
                    (c, set) -> {
                        Set<Armed> into = set != null ? set : ConcurrentHashMap.newKeySet();
                        into.add(fresh);
                        return into;
                    });
        }

        /**
         * Waits until an event arrives on the channel, the timeout passes or the recheck interval
         * does, then re-arms.
         *
         * @return true if an event arrived
         */
        public boolean await(Duration timeout) {
            Duration wait = timeout.compareTo(recheck) < 0 ? timeout : recheck;
            boolean fired;
            try {
                armed.future().get(Math.max(1, wait.toMillis()), TimeUnit.MILLISECONDS);
                fired = true;
            } catch (TimeoutException ex) {
                fired = false;
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                fired = false;
            } catch (ExecutionException ex) {
                fired = false;
            }
            disarm();
            arm();
            return fired;
        }

        private void disarm() {
            waiters.computeIfPresent(
                    channel,
                    (c, set) -> {
                        set.remove(armed);
                        return set.isEmpty() ? null : set;
                    });
        }

        @Override
        public void close() {
            disarm();
        }
    }
}
