package io.weightrelay.publisher.publish;

import io.weightrelay.service.problem.RelayException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Collection of a model's retired generations on demand, when this publisher's segment has no room
 * for the next one. A segment is sized for the active generation plus what is staged for the next:
 * the generation retired by the last commit must be gone before the next is staged, and waiting for
 * control-api's scheduled collection (a minute by default) would stall every training step that
 * publishes faster, or fail it after the rank's reserve timeout. So a reservation that finds no
 * room asks control-api to collect (only generations that are neither active nor leased go), and
 * tries once more.
 *
 * <p>At most one call per model at a time and per {@link #INTERVAL}: every rank of the node retries
 * its reservation every {@code relay.staging.retry-after} while it waits (a loader still holding
 * the retired generation keeps it until it moves on or its lease expires), and control-api need not
 * hear each of them. A caller whose segment was full before the latest collection finished shares
 * that collection's answer; one that found it full again afterwards (a fast loop retired more
 * generations since) waits out the interval and has control-api collect again, instead of being
 * told that room came back when it did not. Thread safe.
 */
final class RetiredGenerations {

    private static final Logger log = LoggerFactory.getLogger(RetiredGenerations.class);

    /** The shortest time between two collections this publisher asks for, per model. */
    static final Duration INTERVAL = Duration.ofSeconds(1);

    /** Waits the given nanoseconds (the interval's rest before the next collection). */
    @FunctionalInterface
    interface Sleeper {
        void sleep(long nanos) throws InterruptedException;
    }

    private final ControlPlane control;
    private final LongSupplier nanoTime;
    private final Sleeper sleeper;
    private final Map<String, Model> models = new ConcurrentHashMap<>();

    private static final class Model {
        final ReentrantLock lock = new ReentrantLock();
        boolean called;
        long lastCall;
        long lastDone;
        int lastCollected;
    }

    RetiredGenerations(ControlPlane control, LongSupplier nanoTime, Sleeper sleeper) {
        this.control = control;
        this.nanoTime = nanoTime;
        this.sleeper = sleeper;
    }

    /**
     * Asks control-api to collect {@code model}'s garbage for a caller whose segment has no room
     * now. A collection that finished after the caller found no room (another rank's reservation, a
     * batch's output block, waited for meanwhile) is shared; otherwise this waits until {@link
     * #INTERVAL} after the last call and asks again. A failed call is logged, not thrown: the
     * caller's reservation simply stays refused, and a later one asks again.
     *
     * @return whether the collection removed at least one generation, so that room may have come
     *     back and the caller should try once more
     */
    boolean collect(String model) {
        return collect(model, nanoTime.getAsLong());
    }

    /** As {@link #collect(String)} for a caller that found no room at {@code noRoomAt}. */
    boolean collect(String model, long noRoomAt) {
        Model m = models.computeIfAbsent(model, k -> new Model());
        m.lock.lock();
        try {
            if (m.called && m.lastDone - noRoomAt > 0) {
                return m.lastCollected > 0;
            }
            if (m.called) {
                long rest = INTERVAL.toNanos() - (nanoTime.getAsLong() - m.lastCall);
                if (rest > 0) {
                    sleeper.sleep(rest);
                }
            }
            m.called = true;
            m.lastCall = nanoTime.getAsLong();
            m.lastCollected = 0;
            try {
                m.lastCollected = control.collectGarbage(model);
            } finally {
                m.lastDone = nanoTime.getAsLong();
            }
            if (m.lastCollected > 0) {
                log.info(
                        "no room in the segment for the next generation of {}: control-api"
                                + " collected {} retired generation(s)",
                        model,
                        m.lastCollected);
            }
            return m.lastCollected > 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (RelayException e) {
            log.warn(
                    "no room in the segment for the next generation of {}, and control-api could"
                            + " not collect its retired generations: {}",
                    model,
                    Publisher.describe(e));
            return false;
        } finally {
            m.lock.unlock();
        }
    }
}
