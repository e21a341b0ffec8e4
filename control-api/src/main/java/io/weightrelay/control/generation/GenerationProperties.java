package io.weightrelay.control.generation;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * Limits and retention of generations.
 *
 * @param maxObjects most stored objects one manifest may imply (larger ones are refused with 413)
 * @param registerBatchMax most objects one registration call may carry
 * @param scheduledGc whether every instance collects garbage of every model periodically
 * @param gcInterval period of that collection
 */
@Validated
@ConfigurationProperties("relay.generations")
public record GenerationProperties(
        @DefaultValue("1000000") @Min(1) @Max(10_000_000) int maxObjects,
        @DefaultValue("100000") @Min(1) int registerBatchMax,
        @DefaultValue("true") boolean scheduledGc,
        @DefaultValue("60s") Duration gcInterval) {}
