package io.weightrelay.control.redis;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The incarnation mark of control-api's Redis: a random value under {@code <prefix>incarnation},
 * created when absent ({@code SET NX}, so every control-api instance behind one Redis agrees on one
 * value). Checked every {@code relay.redis.incarnation-check-ms} (1 s): a mark that changed or
 * vanished since the last check means Redis restarted without its data, so every record is gone; it
 * is logged and counted ({@code relay.redis.data-lost}), and a new mark is made. What survives such
 * a loss is described in control-api's README ("When Redis loses its data").
 */
@Component
public final class Incarnation {

    private static final Logger log = LoggerFactory.getLogger(Incarnation.class);

    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final Counter lost;
    private volatile String current;

    Incarnation(StringRedisTemplate redis, RedisKeys keys, MeterRegistry meters) {
        this.redis = redis;
        this.keys = keys;
        this.lost =
                Counter.builder("relay.redis.data-lost")
                        .description("times control-api found Redis without its incarnation mark")
                        .register(meters);
    }

    /** The mark seen last; null until Redis answered once. */
    public String current() {
        return current;
    }

    /**
     * Checks the mark (making it when absent); returns it, or null when Redis did not answer.
     * Synchronized: segment owners' registrations and heartbeats read it fresh too ({@code
     * Registry}), and a loss is counted once.
     */
    @Scheduled(fixedDelayString = "${relay.redis.incarnation-check-ms:1000}", initialDelay = 0)
    public synchronized String check() {
        String mark;
        try {
            String fresh = UUID.randomUUID().toString();
            Boolean made = redis.opsForValue().setIfAbsent(keys.incarnation(), fresh);
            mark = Boolean.TRUE.equals(made) ? fresh : redis.opsForValue().get(keys.incarnation());
        } catch (RuntimeException e) {
            return null; // Redis away: RedisGuard answers the requests meanwhile
        }
        String seen = current;
        if (seen != null && mark != null && !seen.equals(mark)) {
            lost.increment();
            log.error(
                    "Redis lost its data (incarnation {} is gone, now {}): every generation,"
                            + " registration and session before it is unknown; owners and loaders"
                            + " register again, and generation ids continue above what the trainer"
                            + " reports",
                    seen,
                    mark);
        }
        current = mark;
        return mark;
    }
}
