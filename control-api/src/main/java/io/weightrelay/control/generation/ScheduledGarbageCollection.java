package io.weightrelay.control.generation;

import io.weightrelay.service.problem.RelayException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Collects every model's garbage periodically. Safe on every instance at once: marking and
 * forgetting are scripts, and removing an object twice removes it once.
 */
@Component
@ConditionalOnProperty(
        prefix = "relay.generations",
        name = "scheduled-gc",
        havingValue = "true",
        matchIfMissing = true)
class ScheduledGarbageCollection {

    private static final Logger log = LoggerFactory.getLogger(ScheduledGarbageCollection.class);

    private final GenerationQueries generations;
    private final GenerationGc gc;

    ScheduledGarbageCollection(GenerationQueries generations, GenerationGc gc) {
        this.generations = generations;
        this.gc = gc;
    }

    @Scheduled(
            fixedDelayString = "${relay.generations.gc-interval:60s}",
            initialDelayString = "${relay.generations.gc-interval:60s}")
    void collect() {
        try {
            for (String model : generations.models()) {
                gc.collectGarbage(model);
            }
        } catch (RelayException ex) {
            log.warn("scheduled garbage collection skipped: {}", ex.getMessage());
        }
    }
}
