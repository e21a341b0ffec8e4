package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.weightrelay.control.ControlApiTestProperties;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.RedisUris;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Redis as a real dependency: control-api and its data plane connect to a Redis that requires a
 * password, as an ACL user that may touch only {@code wr:} keys, through Spring Boot's standard
 * {@code spring.data.redis.username} / {@code password} (the data plane's {@code redis-uri} takes
 * them over); a wrong password fails naming Redis's refusal and never the password.
 */
@ControlApiTestProperties
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.data.redis.username=" + AclRedis.USER})
class RedisAuthTest extends RedisDependencyTestSupport {

    private static final PrivateRedis REDIS = AclRedis.started();

    @DynamicPropertySource
    static void aclRedis(DynamicPropertyRegistry registry) {
        keyPrefix(registry, AclRedis.PREFIX);
        registry.add("spring.data.redis.host", () -> "127.0.0.1");
        registry.add("spring.data.redis.port", REDIS::port);
        registry.add("spring.data.redis.password", () -> AclRedis.PASSWORD);
        // No credentials here: the data plane takes spring.data.redis.username / password.
        registry.add("relay.dataplane.redis-uri", REDIS::uri);
    }

    @Test
    void controlApiWorksAsTheAclUser() {
        publishesAndServesTheActiveGeneration();
    }

    @Test
    void theDataPlaneConnectsWithTheSameCredentialsAndNeverPrintsThePassword() {
        String uri = dataplane.properties().redisUri();
        assertThat(uri).startsWith("redis://" + AclRedis.USER + ":").contains(AclRedis.PASSWORD);
        assertThat(dataplane.properties().toString())
                .contains(AclRedis.USER + ":****@")
                .doesNotContain(AclRedis.PASSWORD);
        DataplaneConfig config =
                DataplaneConfig.builder("h9-acl")
                        .redisUri(uri)
                        .keyPrefix(AclRedis.PREFIX + "dp:")
                        .build();
        assertThat(config.toString()).doesNotContain(AclRedis.PASSWORD);
        storesAndFindsAnObject(config, "h9-acl");
    }

    @Test
    void theAclUserIsLimitedToThePrefixAndTheDefaultUserNeedsThePassword() {
        RedisClient client =
                RedisClient.create(
                        RedisURI.builder()
                                .withHost("127.0.0.1")
                                .withPort(REDIS.port())
                                .withAuthentication(AclRedis.USER, AclRedis.PASSWORD.toCharArray())
                                .build());
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            c.sync().set(AclRedis.PREFIX + "probe", "1");
            assertThatThrownBy(() -> c.sync().set("other:h9", "1"))
                    .isInstanceOf(RedisCommandExecutionException.class)
                    .hasMessageContaining("NOPERM");
            assertThatThrownBy(() -> c.sync().flushall())
                    .isInstanceOf(RedisCommandExecutionException.class)
                    .hasMessageContaining("NOPERM");
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
        RedisClient anonymous = RedisClient.create(REDIS.uri());
        try (StatefulRedisConnection<String, String> c = anonymous.connect()) {
            assertThatThrownBy(() -> c.sync().get(AclRedis.PREFIX + "probe"))
                    .hasMessageContaining("NOAUTH");
        } catch (RuntimeException refusedAtConnect) {
            assertThat(refusedAtConnect).hasStackTraceContaining("NOAUTH");
        } finally {
            anonymous.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    @Test
    void aWrongPasswordFailsNamingTheRefusalAndNeverThePassword() {
        String wrong = "wrong-h9-" + System.nanoTime();
        String uri = "redis://" + AclRedis.USER + ":" + wrong + "@127.0.0.1:" + REDIS.port();
        assertThatThrownBy(
                        () ->
                                Dataplane.open(
                                                DataplaneConfig.builder("h9-acl-wrong")
                                                        .redisUri(uri)
                                                        .keyPrefix(AclRedis.PREFIX + "dp:")
                                                        .build())
                                        .close())
                .isInstanceOf(DataplaneException.class)
                .hasMessageContaining("WRONGPASS")
                .hasMessageContaining(RedisUris.mask(uri))
                .hasMessageNotContaining(wrong);
    }
}
