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
 * hear each of them. Thread safe.
 */
final class RetiredGenerations {

    private static final Logger log = LoggerFactory.getLogger(RetiredGenerations.class);

    /** The shortest time between two collections this publisher asks for, per model. */
    static final Duration INTERVAL = Duration.ofSeconds(1);

    private final ControlPlane control;
    private final LongSupplier nanoTime;
    private final Map<String, Model> models = new ConcurrentHashMap<>();

    private static final class Model {
        final ReentrantLock lock = new ReentrantLock();
        boolean called;
        long lastCall;
        int lastCollected;
    }

    RetiredGenerations(ControlPlane control, LongSupplier nanoTime) {
        this.control = control;
        this.nanoTime = nanoTime;
    }

    /**
     * Asks control-api to collect {@code model}'s garbage, unless that was asked less than {@link
     * #INTERVAL} ago; a call made meanwhile by another thread (another rank's reservation, a
     * batch's output block) is waited for and its answer shared. A failed call is logged, not
     * thrown: the caller's reservation simply stays refused, and a later one asks again.
     *
     * @return whether the latest collection removed at least one generation, so that room may have
     *     come back and the caller should try once more
     */
    boolean collect(String model) {
        Model m = models.computeIfAbsent(model, k -> new Model());
        m.lock.lock();
        try {
            long now = nanoTime.getAsLong();
            if (m.called && now - m.lastCall < INTERVAL.toNanos()) {
                return m.lastCollected > 0;
            }
            m.called = true;
            m.lastCall = now;
            m.lastCollected = 0;
            m.lastCollected = control.collectGarbage(model);
            if (m.lastCollected > 0) {
                log.info(
                        "no room in the segment for the next generation of {}: control-api"
                                + " collected {} retired generation(s)",
                        model,
                        m.lastCollected);
            }
            return m.lastCollected > 0;
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
