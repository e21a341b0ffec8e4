package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.control.ControlApiClientSupport;
import io.weightrelay.control.ControlApiTestProperties;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * control-api with a wrong Redis password for its ACL user: it starts, its health is down, and
 * every call that needs Redis is a 503 problem naming Redis's refusal of the credentials; neither
 * the problem nor the log ever holds the password.
 */
@ControlApiTestProperties
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "relay.redis.key-prefix=" + AclRedis.PREFIX + "wrong:",
            "relay.dataplane.key-prefix=" + AclRedis.PREFIX + "wrong:dp:",
            "spring.data.redis.username=" + AclRedis.USER,
            "spring.data.redis.password=" + RedisWrongPasswordTest.WRONG
        })
@ExtendWith(OutputCaptureExtension.class)
class RedisWrongPasswordTest extends ControlApiClientSupport {

    static final String WRONG = "wrong-password-h9-0123456789";

    private static final PrivateRedis REDIS = AclRedis.started();

    @DynamicPropertySource
    static void aclRedis(DynamicPropertyRegistry registry) {
        REDIS.serveAsRedisOf(registry);
    }

    @Test
    void callsFailNamingTheRefusedCredentialsAndNeverThePassword(CapturedOutput output) {
        HttpResponse<String> r = get("/api/v1/models/m-h9/generations/active", OPERATOR);
        assertProblem(r, 503, "redis-unavailable");
        assertThat(r.body())
                .contains("Redis refused control-api's credentials")
                .contains("WRONGPASS")
                .doesNotContain(WRONG);
        HttpResponse<String> again = get("/api/v1/models/m-h9/generations/active", OPERATOR);
        assertProblem(again, 503, "redis-unavailable");
        assertThat(again.body()).contains("WRONGPASS").doesNotContain(WRONG);
        assertThat(get("/actuator/health", null).statusCode()).isEqualTo(503);
        assertThat(output.getAll()).contains("WRONGPASS").doesNotContain(WRONG);
    }
}
