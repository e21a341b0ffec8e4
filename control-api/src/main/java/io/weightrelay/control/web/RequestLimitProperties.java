package io.weightrelay.control.web;

import jakarta.validation.constraints.Positive;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * @param maxRequestBytes largest request body accepted (64 MiB by default)
 */
@Validated
@ConfigurationProperties("relay.limits")
record RequestLimitProperties(@DefaultValue("67108864") @Positive long maxRequestBytes) {}
