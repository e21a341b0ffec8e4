package io.weightrelay.control.plan;

import io.weightrelay.reshard.plan.Planner;
import jakarta.validation.constraints.Positive;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * @param ttl how long a computed plan stays cached (recomputed once after that)
 * @param lockTtl how long one instance may compute a plan before another may take over
 * @param computeTimeout how long a request waits for a plan another request computes
 * @param defaultNicGbps bandwidth of a rollout NIC whose loader did not declare one
 * @param readMaxBytes the planner's upper bound of one read's span (unless a single dim-0 row is
 *     larger)
 * @param batchBytes the staging bytes one reader fills per batch: the pipeline's unit. Smaller
 *     batches shorten its fill and drain (one batch's read before the first push, one batch's push
 *     after the last read), larger ones cost fewer submissions; a loader's read staging holds a few
 *     of them per reader
 * @param eager whether the plans of a generation's rollout groups are resolved when it is opened
 *     and again when it is committed (in the background), rather than by the first prepare that
 *     needs one; and, with {@code eager}, a group's plan for the active generation once the group's
 *     registrations have settled ({@code eagerSettle} without a new one)
 * @param eagerSettle how long a rollout group must go without a loader registering before its plan
 *     for the active generation is resolved: a restarted or added engine's first update finds it,
 *     and a group registering loader by loader has it computed once, not once per loader (zero: not
 *     at registrations; the open, the commit or the first prepare resolves it)
 */
@Validated
@ConfigurationProperties("relay.plans")
public record PlanProperties(
        @DefaultValue("7d") Duration ttl,
        @DefaultValue("60s") Duration lockTtl,
        @DefaultValue("120s") Duration computeTimeout,
        @DefaultValue("100") @Positive double defaultNicGbps,
        @DefaultValue("16MB") DataSize readMaxBytes,
        @DefaultValue("64MB") DataSize batchBytes,
        @DefaultValue("true") boolean eager,
        @DefaultValue("true") boolean warmUp,
        @DefaultValue("1s") Duration eagerSettle) {

    public PlanProperties {
        // Checked at start-up: a bad pair fails the service, never the first plan.
        options(readMaxBytes, batchBytes);
    }

    /** The planner's options these properties name. */
    public Planner.Options options() {
        return options(readMaxBytes, batchBytes);
    }

    private static Planner.Options options(DataSize readMaxBytes, DataSize batchBytes) {
        try {
            return new Planner.Options(readMaxBytes.toBytes(), batchBytes.toBytes());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "relay.plans.read-max-bytes ("
                            + readMaxBytes
                            + ") and relay.plans.batch-bytes ("
                            + batchBytes
                            + "): "
                            + e.getMessage(),
                    e);
        }
    }
}
