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
 * @param path shared-memory file the ranks map; created (or reused) and pre-faulted at start-up
 * @param capacity its size; at most 2 GiB (one Java mapping)
 * @param maxBatchBytes the largest reservation, i.e. the byte bound of one batch
 * @param retryAfter what a 429 tells the rank to wait before it asks again
 * @param reservationTimeout a reservation not handed over within this time is reclaimed (its rank
 *     died)
 */
@Validated
@ConfigurationProperties("relay.staging")
public record StagingProperties(
        @NotNull @DefaultValue("/dev/shm/wr-staging-publisher") Path path,
        @NotNull @DefaultValue("512MB") DataSize capacity,
        @NotNull @DefaultValue("128MB") DataSize maxBatchBytes,
        @NotNull @DefaultValue("200ms") Duration retryAfter,
        @NotNull @DefaultValue("10m") Duration reservationTimeout) {

    public StagingProperties {
        if (capacity != null
                && (capacity.toBytes() <= 0 || capacity.toBytes() > Integer.MAX_VALUE)) {
            throw new IllegalArgumentException("relay.staging.capacity must be in (0, 2 GiB)");
        }
        if (maxBatchBytes != null
                && capacity != null
                && (maxBatchBytes.toBytes() <= 0 || maxBatchBytes.toBytes() > capacity.toBytes())) {
            throw new IllegalArgumentException(
                    "relay.staging.max-batch-bytes must be in (0, capacity]");
        }
    }
}
