package io.weightrelay.publisher.segment;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.publisher.publish.ControlPlane;
import io.weightrelay.reshard.manifest.GenerationId;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Frees the segment memory of generations control-api's Redis forgot. Collections free a
 * generation's objects through the store's directory; when Redis loses its data the directory goes
 * with it, so nobody can remove those objects and their bytes would stay allocated until the
 * publisher restarts. Every heartbeat this asks control-api about each generation this publisher
 * stored objects of ({@link SegmentAllocations}), then reads the incarnation mark of control-api's
 * Redis fresh with the heartbeat: a generation control-api no longer knows, last known under
 * another mark, was lost with Redis, and its allocations are freed; one gone under the same mark
 * was collected normally, and only its record goes. An error or a timeout decides nothing (Redis
 * merely unreachable must never free anything), nor does a control-api that sends no mark.
 *
 * <p>Only a segment whose objects this publisher stored itself: a storage unit's objects are put by
 * other publishers, whose allocations it cannot tell from forgotten ones, so it frees nothing.
 */
final class ForgottenGenerations {

    private static final Logger log = LoggerFactory.getLogger(ForgottenGenerations.class);

    private final SegmentOwner owner;
    private final ControlPlane control;
    private final Counter reclaimed;
    private String lastMark;

    ForgottenGenerations(SegmentOwner owner, ControlPlane control, MeterRegistry meters) {
        this.owner = owner;
        this.control = control;
        this.reclaimed =
                Counter.builder("relay.publisher.segment.reclaimed")
                        .baseUnit("bytes")
                        .description(
                                "segment bytes freed because control-api's Redis lost the"
                                        + " generations whose objects held them")
                        .register(meters);
    }

    /**
     * Asks control-api about every generation with objects recorded; empty when any question went
     * unanswered (nothing is decided this time).
     */
    Optional<Map<String, Boolean>> ask() {
        Map<String, Boolean> known = new HashMap<>();
        for (String g : owner.allocations().generations()) {
            try {
                known.put(g, control.knowsGeneration(GenerationId.ofPath(g)));
            } catch (RuntimeException e) {
                log.debug("cannot ask control-api about {}: {}", g, e.getMessage());
                return Optional.empty();
            }
        }
        return Optional.of(known);
    }

    /**
     * Applies the answers of {@link #ask} given the mark control-api sent afterwards: {@code
     * answered} whether the heartbeat (or registration) was answered, {@code mark} the mark it
     * carried (null from a control-api that sends none).
     */
    void settle(Optional<Map<String, Boolean>> known, boolean answered, String mark) {
        if (!answered) {
            return;
        }
        if (mark == null) {
            known.ifPresent(k -> owner.allocations().forgetUnknown(k));
            return;
        }
        String before = lastMark;
        lastMark = mark;
        if (before != null && !before.equals(mark)) {
            log.warn(
                    "control-api's Redis lost its data (incarnation {} is now {}): the objects of"
                            + " generations it forgot are freed from segment '{}'",
                    before,
                    mark,
                    owner.segmentName());
        }
        if (known.isEmpty()) {
            owner.allocations().seen(mark);
            return;
        }
        long bytes = owner.allocations().settle(known.get(), before, mark, owner::freeForgotten);
        if (bytes > 0) {
            reclaimed.increment(bytes);
        }
    }
}
