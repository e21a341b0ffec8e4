package io.weightrelay.control.generation;

import io.weightrelay.api.control.model.Lease;
import io.weightrelay.control.redis.RedisGuard;
import io.weightrelay.control.redis.RedisKeys;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.control.registry.ControlPlaneTicks;
import io.weightrelay.reshard.manifest.GenerationId;
import java.time.Instant;
import java.time.ZoneOffset;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;

/**
 * Leases on committed generations: a holder (a loader, a checkpoint) keeps a generation from
 * garbage collection until its lease expires or is released. No lease is longer than {@code
 * relay.generations.max-lease-ttl}. Expiries are on the Redis server's clock ({@code lease.lua}
 * adds the TTL to it, {@code gc-mark.lua} compares with it), never on one instance's.
 */
@Service
public class Leases {

    private final GenerationScripts scripts;
    private final GenerationQueries generations;
    private final StringRedisTemplate redis;
    private final RedisKeys keys;
    private final RedisGuard guard;
    private final long maxTtlSeconds;
    private final ControlPlaneTicks ticks;

    Leases(
            GenerationScripts scripts,
            GenerationQueries generations,
            StringRedisTemplate redis,
            RedisKeys keys,
            RedisGuard guard,
            GenerationProperties properties,
            ControlPlaneTicks ticks) {
        this.ticks = ticks;
        this.scripts = scripts;
        this.generations = generations;
        this.redis = redis;
        this.keys = keys;
        this.guard = guard;
        this.maxTtlSeconds = properties.maxLeaseTtl().toSeconds();
    }

    /**
     * Refuses (400 {@code lease-ttl-too-long}, naming the limit) a lease longer than {@code
     * relay.generations.max-lease-ttl}: a lease keeps a generation's bytes from garbage collection,
     * so its length is bounded whoever asks. A loader renews a short lease instead.
     */
    public void requireTtl(int ttlSeconds) {
        if (ttlSeconds > maxTtlSeconds) {
            throw GenerationProblems.LEASE_TTL_TOO_LONG
                    .exception(
                            "a lease of "
                                    + ttlSeconds
                                    + " s is longer than relay.generations.max-lease-ttl ("
                                    + maxTtlSeconds
                                    + " s): take a shorter one and renew it")
                    .with("ttlSeconds", ttlSeconds)
                    .with("maxTtlSeconds", maxTtlSeconds);
        }
    }

    public Lease lease(GenerationId id, String holder, int ttlSeconds) {
        requireTtl(ttlSeconds);
        Reply result =
                scripts.run(
                        "lease",
                        id.model(),
                        String.valueOf(id.generation()),
                        holder,
                        String.valueOf(ttlSeconds * 1000L),
                        String.valueOf(ticks.leaseFloor().toEpochMilli()));
        return switch (result.code()) {
            case "ok" ->
                    new Lease(
                            id.model(),
                            id.generation(),
                            holder,
                            Instant.ofEpochMilli(result.number(1)).atOffset(ZoneOffset.UTC));
            case "not-found" -> throw GenerationQueries.notFound(id);
            case "not-leasable" ->
                    throw GenerationProblems.GENERATION_NOT_LEASABLE
                            .exception(
                                    "generation "
                                            + id.generation()
                                            + " is "
                                            + result.item(1)
                                            + " and can no longer be leased")
                            .with("state", result.item(1));
            default -> throw result.unexpected();
        };
    }

    public void release(GenerationId id, String holder) {
        generations.load(id);
        guard.call(() -> redis.opsForZSet().remove(keys.leases(id), holder));
    }
}
