package io.weightrelay.loader;

import io.weightrelay.service.test.ServiceSmokeTestSupport;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Starts the whole service on a loopback port and checks what every operator and client meets
 * first.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "relay.limits.max-request-bytes=1048576")
class LoaderSmokeTest extends ServiceSmokeTestSupport {

    static final String ENGINE_TOKEN = "engine-token-for-smoke-tests";
    static final String METRICS_TOKEN = "metrics-token-for-smoke-tests";

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        RedisTestSupport.register(registry);
        registry.add("relay.security.tokens.loader[0]", () -> ENGINE_TOKEN);
        registry.add("relay.security.tokens.metrics[0]", () -> METRICS_TOKEN);
    }

    /** Every call of this test carries the engine's token unless it says otherwise. */
    @Override
    protected HttpResponse<String> send(HttpRequest.Builder request) {
        return super.send(request.header("Authorization", "Bearer " + ENGINE_TOKEN));
    }

    @Test
    void callsWithoutATokenAreRefused() {
        assertProblem(
                super.send(HttpRequest.newBuilder(uri("/api/v1/instance")).GET()),
                401,
                "unauthorized");
        assertProblem(get("/actuator/metrics"), 403, "forbidden");
    }

    @Test
    void healthAndApiDocsAnswer() {
        assertHealthy();
        assertServesTheContract("loader.yaml", "weight-relay loader API", "/api/v1/instance");
    }

    @Test
    void aScrapeTokenReadsMetricsAndNothingElse() {
        assertScrapeTokenReadsOnlyMetrics(METRICS_TOKEN, "/api/v1/instance");
    }

    @Test
    void whatTheContainerRefusesIsProblemJson() {
        assertContainerRejectionsAreProblems();
        assertChunkedBodyOverTheLimitIsRefused("PUT", "/api/v1/instance", ENGINE_TOKEN, 1 << 20);
    }

    @Test
    void whatSpringRefusesIsProblemJsonToo() {
        assertTraceAndBadMultipartAreProblems(ENGINE_TOKEN, "/api/v1/updates/current");
        assertBodyIsRefusedAsInvalid(
                ENGINE_TOKEN,
                "PUT",
                "/api/v1/instance",
                "{\"instanceId\":\"i0\",\"model\":\"m\",\"group\":\"g\",\"node\":\"n0\","
                        + "\"workers\":[null]}");
    }

    @Test
    void badRequestIsProblemJson() {
        assertProblem(
                send(jsonRequest("PUT", "/api/v1/instance", "{\"instanceId\": \"a b\"}")),
                400,
                "invalid-request");
    }

    @Test
    void nothingIsRegisteredBeforeTheEngineRegisters() {
        assertProblem(get("/api/v1/instance"), 404, "instance-not-registered");
        assertProblem(
                send(jsonRequest("POST", "/api/v1/updates", "{}")), 404, "instance-not-registered");
        assertProblem(get("/api/v1/updates/current"), 404, "update-not-found");
    }

    @Test
    void unknownPathIsProblemJson() {
        assertProblem(get("/api/v1/no-such-thing"), 404, "not-found");
    }
}
