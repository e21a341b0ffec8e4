package io.weightrelay.control.update;

import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.control.redis.RedisEvents;
import java.time.Duration;

/**
 * A barrier's wait on its session's events, whose message is the session's state after the script
 * that published it. When {@code byState}, only an event naming another state than the one its
 * caller last read wakes it: an event of a report that left the state as it was cannot have opened
 * or failed the barrier. An event that came before that read (a loader's own report, published
 * while its call still read the session) wakes it only when the newest event since names another
 * state than the read. States never come back, and events arrive in the order Redis published them,
 * so a change after a read always comes as an event that wakes the waiter.
 */
final class StateWaiter implements AutoCloseable {

    private final RedisEvents.Waiter waiter;

    /** The state last read, as the events name it; null until the first read. */
    private volatile String read;

    /** The message of the newest event delivered; null until one is. */
    private volatile String newest;

    /** Whether an event naming another state than the read came since the read. */
    private volatile boolean changed;

    StateWaiter(RedisEvents events, String channel, boolean byState) {
        this.waiter =
                events.waiter(
                        channel,
                        message -> {
                            newest = message;
                            if (!byState || !message.equals(read)) {
                                changed = true;
                                return true;
                            }
                            return false;
                        });
    }

    /** The session was read in {@code state}: events naming it pass this waiter by. */
    void read(SessionState state) {
        changed = false;
        read = state.getValue();
    }

    /**
     * As {@link RedisEvents.Waiter#await}: true when an event that may have changed the barrier's
     * answer woke it, false when the clock (the timeout, or the recheck) did.
     */
    boolean await(Duration timeout) {
        long end = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (!waiter.await(Duration.ofNanos(Math.max(0, end - System.nanoTime())))) {
                return false;
            }
            String last = read;
            if (changed || last == null || !last.equals(newest)) {
                return true;
            }
            // Only events naming the state already read came: nothing to read again.
            if (end - System.nanoTime() <= 0) {
                return false;
            }
        }
    }

    @Override
    public void close() {
        waiter.close();
    }
}
