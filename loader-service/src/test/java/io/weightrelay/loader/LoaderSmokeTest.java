package io.weightrelay.loader;

import io.weightrelay.service.test.RedisTestSupport;
import io.weightrelay.service.test.ServiceSmokeTestSupport;
import java.net.http.HttpRequest;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Starts the whole service on a loopback port and checks what every operator and client meets
 * first.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class LoaderSmokeTest extends ServiceSmokeTestSupport {

    @Value("${local.server.port}")
    int port;

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        RedisTestSupport.register(registry);
    }

    @Override
    protected int port() {
        return port;
    }

    @Test
    void healthAndApiDocsAnswer() {
        assertHealthy();
        assertServesOpenApi("/api/v1/instance");
    }

    @Test
    void badRequestIsProblemJson() {
        assertProblem(
                send(
                        HttpRequest.newBuilder(uri("/api/v1/instance"))
                                .header("Content-Type", "application/json")
                                .PUT(
                                        HttpRequest.BodyPublishers.ofString(
                                                "{\"instanceId\": \"a b\"}"))),
                400,
                "invalid-request");
    }

    @Test
    void unknownPathIsProblemJson() {
        assertProblem(get("/api/v1/no-such-thing"), 404, "not-found");
    }
}
