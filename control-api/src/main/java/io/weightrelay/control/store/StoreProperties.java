package io.weightrelay.control.store;

import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.Pattern;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * How control-api reaches the data plane's store. Control-api owns no segment; it opens a data
 * plane only to remove objects (which frees their space in the owners' segments) and to read the
 * object directory.
 *
 * @param redisUri Redis holding the store's object directory
 * @param keyPrefix the data plane's key prefix
 * @param nodeLabel node label of control-api's own engine
 * @param bindHost address its engine's tcp server binds
 * @param ioTimeout how long a silent segment owner is waited for
 */
@Validated
@ConfigurationProperties("relay.store")
public record StoreProperties(
        @DefaultValue("redis://127.0.0.1:6379") @NotBlank String redisUri,
        @DefaultValue("wr:dp:") @Pattern(regexp = "^wr:.*") String keyPrefix,
        @DefaultValue("control-api") @NotBlank String nodeLabel,
        @DefaultValue("127.0.0.1") @NotBlank String bindHost,
        @DefaultValue("10s") Duration ioTimeout) {}
