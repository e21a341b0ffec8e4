package io.weightrelay.control.plan;

import jakarta.validation.constraints.Positive;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * @param ttl how long a computed plan stays cached (recomputed once after that)
 * @param lockTtl how long one instance may compute a plan before another may take over
 * @param computeTimeout how long a request waits for a plan another request computes
 * @param defaultNicGbps bandwidth of a rollout NIC whose loader did not declare one
 */
@Validated
@ConfigurationProperties("relay.plans")
public record PlanProperties(
        @DefaultValue("7d") Duration ttl,
        @DefaultValue("60s") Duration lockTtl,
        @DefaultValue("120s") Duration computeTimeout,
        @DefaultValue("100") @Positive double defaultNicGbps) {}
