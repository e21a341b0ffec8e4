package io.weightrelay.control.update;

import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.control.redis.RedisEvents;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

/**
 * A barrier's wait on its session's events, whose message is the session's state after the script
 * that published it. When {@code byState}, only an event naming another state than the one its
 * caller last read wakes it: an event of a report that left the state as it was cannot have opened
 * or failed the barrier. Events may arrive in any order (the listener container dispatches each on
 * a thread of its own), so what came while a read was under way ({@link #reading} to {@link #read})
 * is judged against what that read found: an event published after the read began came after it,
 * and names another state than the read unless it changed nothing the barrier depends on.
 */
final class StateWaiter implements AutoCloseable {

    private final RedisEvents.Waiter waiter;
    private final boolean byState;

    /** The state last read, as the events name it; null until the first read. */
    private String read;

    /** The messages of the events that came since the read under way began. */
    private final Set<String> during = new HashSet<>();

    /** Whether an event naming another state than the read came since the read began. */
    private boolean changed;

    StateWaiter(RedisEvents events, String channel, boolean byState) {
        this.byState = byState;
        this.waiter = events.waiter(channel, this::arrived);
    }

    private synchronized boolean arrived(String message) {
        during.add(message);
        if (!byState || !message.equals(read)) {
            changed = true;
            return true;
        }
        return false;
    }

    /** A read of the session begins: events from now on are judged against what it finds. */
    synchronized void reading() {
        during.clear();
        changed = false;
    }

    /** The read found the session in {@code state}: events naming it pass this waiter by. */
    synchronized void read(SessionState state) {
        read = state.getValue();
        changed = false;
        for (String message : during) {
            if (!byState || !message.equals(read)) {
                changed = true;
            }
        }
        during.clear();
    }

    private synchronized boolean changed() {
        return changed;
    }

    /**
     * As {@link RedisEvents.Waiter#await}: true when an event that may have changed the barrier's
     * answer woke it, false when the clock (the timeout, or the recheck) did.
     */
    boolean await(Duration timeout) {
        long end = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (changed()) {
                return true;
            }
            if (!waiter.await(Duration.ofNanos(Math.max(0, end - System.nanoTime())))) {
                return changed();
            }
            if (changed()) {
                return true;
            }
            // Only events naming the state the read found came: nothing to read again.
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
