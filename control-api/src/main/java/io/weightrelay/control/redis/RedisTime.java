package io.weightrelay.control.redis;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.concurrent.TimeUnit;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Component;

/**
 * The one clock that every control-api instance shares: the Redis server's. Expiries (heartbeats,
 * leases), phase deadlines and the stamps whose order matters are written by the scripts from
 * {@code redis.call('TIME')}, with durations passed from Java; what Java compares with them (is a
 * loader live, how old is a heartbeat, when does a phase end) it compares with {@link #now()}. No
 * instance's own clock decides anything another instance reads, so a replica whose clock is off by
 * minutes declares no loader dead and lets no lease lapse early.
 */
@Component
public class RedisTime {

    private final StringRedisTemplate redis;
    private final RedisGuard guard;

    public RedisTime(StringRedisTemplate redis, RedisGuard guard) {
        this.redis = redis;
        this.guard = guard;
    }

    /** The Redis server's time now ({@code TIME}, to the millisecond). */
    public Instant now() {
        Long ms =
                guard.call(
                        () ->
                                redis.execute(
                                        (RedisCallback<Long>)
                                                (RedisConnection c) ->
                                                        c.serverCommands()
                                                                .time(TimeUnit.MILLISECONDS)));
        if (ms == null) {
            throw new IllegalStateException("Redis answered TIME with nothing");
        }
        return Instant.ofEpochMilli(ms);
    }

    /**
     * A stamp as stored: epoch microseconds when a script took it from the Redis server clock (what
     * every script writes now), ISO-8601 as older records and checkpoint manifests carry it; null
     * for none.
     */
    public static OffsetDateTime stamp(String value) {
        if (value == null || value.isEmpty()) {
            return null;
        }
        if (value.chars().allMatch(Character::isDigit)) {
            long micros = Long.parseLong(value);
            return Instant.ofEpochSecond(micros / 1_000_000, (micros % 1_000_000) * 1_000)
                    .atOffset(ZoneOffset.UTC);
        }
        return OffsetDateTime.parse(value);
    }
}
