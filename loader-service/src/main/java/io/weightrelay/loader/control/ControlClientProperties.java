package io.weightrelay.loader.control;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How the loader's calls to control-api ({@code relay.loader.control-url}) wait: {@code
 * relay.loader.control-client.*}. Retries are the Resilience4j retry {@code control-api} ({@code
 * application.yaml}: what got no answer, a 503 or a 429 is sent again with backoff for up to about
 * 48 s, so an update waits out a control-api restart).
 *
 * @param connectTimeout connecting to one control-api instance (default {@code 5s}); with several
 *     instances the next is tried after it
 * @param readTimeout waiting for one answer (default {@code 6m}: above the longest barrier wait a
 *     loader asks for, 300 s, and a plan computed at scale)
 */
@ConfigurationProperties("relay.loader.control-client")
public record ControlClientProperties(
        @DefaultValue("5s") Duration connectTimeout, @DefaultValue("6m") Duration readTimeout) {}
