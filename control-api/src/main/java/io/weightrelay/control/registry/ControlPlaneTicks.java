package io.weightrelay.control.registry;

import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.control.redis.ScriptCall.Reply;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Whether a registration's heartbeats could have been received. Every control-api instance ticks
 * ({@code tick.lua}, every {@code relay.registry.tick}); a tick that finds the last one (of any
 * instance) older than {@code relay.registry.outage-gap} records the window in which none served. A
 * registration that expired within such a window counts as live until one TTL after it ended
 * ({@link #liveAfter}): the only control-api killed and restarted mid-update does not judge every
 * loader dead for heartbeats it could not receive. While another replica keeps ticking there is no
 * window and no grace: heartbeats were being received.
 */
@Component
public class ControlPlaneTicks {

    private static final Logger log = LoggerFactory.getLogger(ControlPlaneTicks.class);

    private final ScriptCall scripts;
    private final RedisKeys keys;
    private final RegistryProperties properties;

    ControlPlaneTicks(ScriptCall scripts, RedisKeys keys, RegistryProperties properties) {
        this.scripts = scripts;
        this.keys = keys;
        this.properties = properties;
    }

    @Scheduled(fixedDelayString = "${relay.registry.tick:1s}", initialDelay = 0)
    void tick() {
        Reply result;
        try {
            result = scripts.run("tick", keys(), millis(properties.outageGap()), millis(grace()));
        } catch (RuntimeException e) {
            return; // Redis away: no heartbeat is received either, and the next tick says so
        }
        if (result.is("outage")) {
            Instant from = Instant.ofEpochMilli(result.number(1));
            Instant until = Instant.ofEpochMilli(result.number(2));
            log.warn(
                    "no control-api instance served from {} to {} ({}): registrations that"
                            + " expired since then count as live until one TTL after {}, so they"
                            + " can heartbeat again",
                    from,
                    until,
                    Duration.between(from, until),
                    until);
        } else if (!result.is("ok")) {
            throw result.unexpected();
        }
    }

    /**
     * The instant after which an expiry of a registration with {@code ttl} makes it live: the Redis
     * server's time now, or the start of an outage whose grace still runs.
     */
    public Instant liveAfter(Duration ttl) {
        Reply result =
                scripts.run("live-after", keys(), millis(ttl), millis(properties.outageGap()));
        if (!result.is("ok")) {
            throw result.unexpected();
        }
        return Instant.ofEpochMilli(result.number(1));
    }

    /**
     * The instant after which a lease's expiry still holds its generation: the Redis server's time
     * now, or the start of an outage of every control-api instance whose grace (one registration
     * TTL after it ended) still runs. A lease that lapsed while nobody could receive its holder's
     * heartbeats or renewals keeps its generation from garbage collection for that long, so its
     * holder (a loader reading the generation when control-api went away) can renew it.
     */
    public Instant leaseFloor() {
        return liveAfter(grace());
    }

    /** The grace after an outage, in ms, for a script that applies the rule itself. */
    public String graceMillis() {
        return millis(grace());
    }

    /** The keys the liveness rule reads, for a script that applies it itself. */
    public List<String> keys() {
        return List.of(keys.lastTick(), keys.outage());
    }

    /** The gap that makes an outage, in ms, for a script that applies the rule itself. */
    public String gapMillis() {
        return millis(properties.outageGap());
    }

    private Duration grace() {
        return properties.loaderTtl().compareTo(properties.segmentTtl()) >= 0
                ? properties.loaderTtl()
                : properties.segmentTtl();
    }

    private static String millis(Duration d) {
        return String.valueOf(d.toMillis());
    }
}
