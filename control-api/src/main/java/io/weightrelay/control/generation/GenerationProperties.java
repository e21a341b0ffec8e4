package io.weightrelay.control.generation;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * Limits and retention of generations.
 *
 * @param maxObjects most stored objects one manifest may imply (larger ones are refused with 413)
 * @param registerBatchMax most objects one registration call may carry
 * @param scheduledGc whether every instance collects garbage of every model periodically
 * @param gcInterval period of that collection
 * @param maxLeaseTtl the longest lease a caller may take or renew on a generation (a loader's or a
 *     prepare's): longer ones are refused with 400 {@code lease-ttl-too-long}, so no token can pin
 *     a generation against garbage collection for longer than this at a time
 * @param manifestCache the most bytes the in-memory forms of manifests may take (encoded, gzipped,
 *     decoded, the JSON view, the #3187 export; least recently used out first): a Kimi-K2 manifest
 *     takes about 12 MB encoded and several times that decoded, so the default holds the forms of
 *     two or three such layouts
 */
@Validated
@ConfigurationProperties("relay.generations")
public record GenerationProperties(
        @DefaultValue("1000000") @Min(1) @Max(10_000_000) int maxObjects,
        @DefaultValue("100000") @Min(1) int registerBatchMax,
        @DefaultValue("true") boolean scheduledGc,
        @DefaultValue("60s") Duration gcInterval,
        @DefaultValue("1h") Duration maxLeaseTtl,
        @DefaultValue("256MB") DataSize manifestCache) {

    public GenerationProperties {
        if (maxLeaseTtl.toSeconds() < 1 || maxLeaseTtl.toSeconds() > 86_400) {
            throw new IllegalArgumentException(
                    "relay.generations.max-lease-ttl must be between 1s and 24h, not "
                            + maxLeaseTtl);
        }
        if (manifestCache.toBytes() < 0) {
            throw new IllegalArgumentException(
                    "relay.generations.manifest-cache must not be negative, not " + manifestCache);
        }
    }
}
