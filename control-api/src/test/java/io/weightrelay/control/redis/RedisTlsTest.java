package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.weightrelay.control.ControlApiTestProperties;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.DataplaneException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Redis over TLS: control-api and its data plane reach a Redis that speaks only TLS through Spring
 * Boot's standard {@code spring.data.redis.ssl.*} and one PEM SSL bundle holding a private
 * certificate authority; the data plane takes the bundle's CA. Plain text, and TLS without that CA,
 * are refused.
 */
@ControlApiTestProperties
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.data.redis.ssl.enabled=true", "spring.data.redis.ssl.bundle=redis"})
class RedisTlsTest extends RedisDependencyTestSupport {

    private static final PrivateRedis REDIS = TlsRedis.started();

    @DynamicPropertySource
    static void tlsRedis(DynamicPropertyRegistry registry) {
        keyPrefix(registry, TlsRedis.PREFIX);
        // redis:// on purpose: spring.data.redis.ssl.enabled turns it into rediss://.
        REDIS.serveAsRedisOf(registry);
        registry.add(
                "spring.ssl.bundle.pem.redis.truststore.certificate",
                () -> "file:" + TlsRedis.caCertificate());
    }

    @Test
    void controlApiWorksOverTls() {
        publishesAndServesTheActiveGeneration();
    }

    @Test
    void theDataPlaneSpeaksTlsTrustingTheBundlesCertificateAuthority() {
        assertThat(dataplane.properties().redisUri()).startsWith("rediss://127.0.0.1:");
        assertThat(dataplane.properties().redisCaCertificate()).isEqualTo(TlsRedis.caCertificate());
        storesAndFindsAnObject(dataplane.config("tls-node"), "redis-tls");
    }

    @Test
    void withoutTheCertificateAuthorityTheDataPlaneRefusesTheServer() {
        String uri = "rediss://127.0.0.1:" + REDIS.port();
        assertThatThrownBy(
                        () ->
                                Dataplane.open(
                                                DataplaneConfig.builder("tls-untrusted")
                                                        .redisUri(uri)
                                                        .keyPrefix(TlsRedis.PREFIX + "dp:")
                                                        .build())
                                        .close())
                .isInstanceOf(DataplaneException.class)
                .hasMessageContaining("cannot connect to Redis at " + uri)
                .hasMessageContaining("certification path");
    }

    @Test
    void plainTextIsRefused() {
        RedisClient client = RedisClient.create(REDIS.uri());
        try {
            assertThatThrownBy(() -> client.connect().sync().ping())
                    .isInstanceOf(RuntimeException.class);
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }
}
