package io.weightrelay.control.generation;

import io.weightrelay.api.control.model.Lease;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall.Reply;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;

/**
 * Leases on committed generations: a holder (a loader, a checkpoint) keeps a generation from
 * garbage collection until its lease expires or is released.
 */
@Service
public class Leases {

    private final GenerationScripts scripts;
    private final GenerationQueries generations;
    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final Clock clock;

    Leases(
            GenerationScripts scripts,
            GenerationQueries generations,
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            Clock clock) {
        this.scripts = scripts;
        this.generations = generations;
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.clock = clock;
    }

    public Lease lease(String model, long generation, String holder, int ttlSeconds) {
        Instant now = clock.instant();
        Instant expiry = now.plusSeconds(ttlSeconds);
        Reply result =
                scripts.run(
                        "lease",
                        model,
                        String.valueOf(generation),
                        holder,
                        String.valueOf(expiry.toEpochMilli()),
                        String.valueOf(now.toEpochMilli()));
        return switch (result.code()) {
            case "ok" -> new Lease(model, generation, holder, expiry.atOffset(ZoneOffset.UTC));
            case "not-found" -> throw GenerationQueries.notFound(model, generation);
            case "not-leasable" ->
                    throw GenerationProblems.GENERATION_NOT_LEASABLE
                            .exception(
                                    "generation "
                                            + generation
                                            + " is "
                                            + result.item(1)
                                            + " and can no longer be leased")
                            .with("state", result.item(1));
            default -> throw result.unexpected();
        };
    }

    public void release(String model, long generation, String holder) {
        generations.load(model, generation);
        guard.call(() -> redis.opsForZSet().remove(keys.leases(model, generation), holder));
    }
}
