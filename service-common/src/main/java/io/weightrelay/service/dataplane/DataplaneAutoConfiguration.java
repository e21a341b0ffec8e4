package io.weightrelay.service.dataplane;

import java.nio.file.Path;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Binds {@code relay.dataplane.*} and checks it as the context starts, so a service with settings
 * that cannot work refuses to start (naming the property) instead of failing on first use. The
 * store's Redis takes the service's {@code spring.data.redis.username} / {@code password} / {@code
 * ssl.enabled} unless {@code relay.dataplane.redis-uri} carries credentials of its own, and for TLS
 * trusts the PEM trust store of the SSL bundle {@code spring.data.redis.ssl.bundle} names (so one
 * {@code spring.ssl.bundle.pem.<name>.truststore.certificate} serves Spring's client and the data
 * plane's) unless {@code relay.dataplane.redis-ca-certificate} is set.
 */
@AutoConfiguration
@EnableConfigurationProperties(DataplaneProperties.class)
public class DataplaneAutoConfiguration {

    @Bean
    DataplaneSettings dataplaneSettings(DataplaneProperties properties, Environment environment) {
        return new DataplaneSettings(
                properties.withRedisCredentials(
                        environment.getProperty("spring.data.redis.username"),
                        environment.getProperty("spring.data.redis.password"),
                        environment.getProperty(
                                "spring.data.redis.ssl.enabled", Boolean.class, false),
                        bundleCaCertificate(environment)));
    }

    /** The file of the PEM trust store of the Redis SSL bundle, or {@code null}. */
    static Path bundleCaCertificate(Environment environment) {
        String bundle = environment.getProperty("spring.data.redis.ssl.bundle");
        if (bundle == null || bundle.isBlank()) {
            return null;
        }
        String location =
                environment.getProperty(
                        "spring.ssl.bundle.pem." + bundle.trim() + ".truststore.certificate");
        if (location == null || location.isBlank() || location.startsWith("classpath:")) {
            // A JKS bundle or a classpath resource: the data plane then needs
            // relay.dataplane.redis-ca-certificate, or the JVM's trust store.
            return null;
        }
        String file =
                location.startsWith("file:") ? location.substring("file:".length()) : location;
        return file.startsWith("-----BEGIN") ? null : Path.of(file);
    }
}
