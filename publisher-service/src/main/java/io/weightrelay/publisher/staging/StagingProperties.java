package io.weightrelay.publisher.staging;

import jakarta.validation.constraints.NotNull;
import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * The staging area.
 *
 * @param mode where staged bytes live: {@code segment} (default: inside the node's store segment,
 *     stored without a copy; size the segment for the active generation plus {@code capacity}) or
 *     {@code file} (a file of its own, each object copied into the store)
 * @param path the staging file of {@code file} mode; created (or reused) and pre-faulted at
 *     start-up (in {@code segment} mode ranks map the segment's file instead)
 * @param capacity the most bytes reserved at once; in {@code file} mode also the file's size, at
 *     most 2 GiB (one Java mapping)
 * @param maxBatchBytes the largest reservation, i.e. the byte bound of one batch
 * @param retryAfter what a 429 tells the rank to wait before it asks again
 * @param reservationTimeout a reservation not handed over within this time is reclaimed (its rank
 *     died)
 */
@Validated
@ConfigurationProperties("relay.staging")
public record StagingProperties(
        @NotNull @DefaultValue("segment") StagingArea.Mode mode,
        @NotNull @DefaultValue("/dev/shm/wr-staging-publisher") Path path,
        @NotNull @DefaultValue("512MB") DataSize capacity,
        @NotNull @DefaultValue("128MB") DataSize maxBatchBytes,
        @NotNull @DefaultValue("200ms") Duration retryAfter,
        @NotNull @DefaultValue("10m") Duration reservationTimeout) {

    public StagingProperties {
        if (capacity != null && capacity.toBytes() <= 0) {
            throw new IllegalArgumentException("relay.staging.capacity must be > 0");
        }
        if (maxBatchBytes != null
                && capacity != null
                && (maxBatchBytes.toBytes() <= 0 || maxBatchBytes.toBytes() > capacity.toBytes())) {
            throw new IllegalArgumentException(
                    "relay.staging.max-batch-bytes must be in (0, capacity]");
        }
    }
}
