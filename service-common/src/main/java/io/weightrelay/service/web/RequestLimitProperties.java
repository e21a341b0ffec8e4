package io.weightrelay.service.web;

import jakarta.validation.constraints.Positive;
import jakarta.validation.constraints.PositiveOrZero;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * @param maxRequestBytes largest request body accepted (64 MiB by default)
 * @param maxInFlightRequestBytes most request-body bytes being handled at once; a request that
 *     would go over waits for none and is refused with 503 {@code overloaded}. 0 (the default)
 *     means an eighth of the heap: a JSON body takes several times its size once parsed.
 */
@Validated
@ConfigurationProperties("relay.limits")
public record RequestLimitProperties(
        @DefaultValue("67108864") @Positive long maxRequestBytes,
        @DefaultValue("0") @PositiveOrZero long maxInFlightRequestBytes) {

    long inFlightBudget() {
        return maxInFlightRequestBytes > 0
                ? maxInFlightRequestBytes
                : Math.max(maxRequestBytes, Runtime.getRuntime().maxMemory() / 8);
    }
}
