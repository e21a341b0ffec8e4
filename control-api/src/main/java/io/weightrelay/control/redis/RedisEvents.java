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
 * during a Redis outage costs at most that.
 */
@Component
public final class RedisEvents {

    private final Map<String, Set<CompletableFuture<Void>>> waiters = new ConcurrentHashMap<>();
    private final Duration recheck;

    RedisEvents(RedisRecoveryProperties recovery) {
        this.recheck = recovery.recheck();
    }

    void subscribe(RedisMessageListenerContainer container, RedisKeys keys) {
        container.addMessageListener(this::onMessage, new PatternTopic(keys.eventPattern()));
    }

    private void onMessage(Message message, byte[] pattern) {
        wake(new String(message.getChannel(), StandardCharsets.UTF_8));
    }

    /** Wakes this instance's waiters of {@code channel}, as an event on it does. */
    void wake(String channel) {
        Set<CompletableFuture<Void>> set = waiters.get(channel);
        if (set != null) {
            set.forEach(f -> f.complete(null));
        }
    }

    /** Registers interest in a channel; close it when done. */
    public Waiter waiter(String channel) {
        return new Waiter(channel);
    }

    /** One registration; not thread safe, use from the waiting thread. */
    public final class Waiter implements AutoCloseable {
        private final String channel;
        private CompletableFuture<Void> future;

        private Waiter(String channel) {
            this.channel = channel;
            arm();
        }

        /**
         * Adds a fresh future to the channel's set inside the map's compute, as {@link #disarm}
         * removes one: adding after a {@code computeIfAbsent} returned could land in a set that
         * another waiter's disarm had just emptied and dropped from the map, where no event ever
         * finds it (a barrier's waiter then slept until its recheck, 5 s, with the barrier open).
         */
        private void arm() {
            CompletableFuture<Void> armed = new CompletableFuture<>();
            future = armed;
            waiters.compute(
                    channel,
                    (c, set) -> {
                        Set<CompletableFuture<Void>> into =
                                set != null ? set : ConcurrentHashMap.newKeySet();
                        into.add(armed);
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
                future.get(Math.max(1, wait.toMillis()), TimeUnit.MILLISECONDS);
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
                        set.remove(future);
                        return set.isEmpty() ? null : set;
                    });
        }

        @Override
        public void close() {
            disarm();
        }
    }
}
