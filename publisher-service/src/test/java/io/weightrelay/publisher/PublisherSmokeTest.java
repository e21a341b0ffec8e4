package io.weightrelay.publisher;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.service.test.ServiceSmokeTestSupport;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
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
class PublisherSmokeTest extends ServiceSmokeTestSupport {

    /** A valid checkpoint request, which only the segment owner's token may send. */
    private static final String CHECKPOINT =
            "{\"model\":\"m\",\"generation\":1,\"directory\":\"/tmp/x\"}";

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        TestPublisherProperties.register(registry, "publisher-smoke", "node-smoke");
    }

    /** Every call of this test carries a trainer token unless it says otherwise. */
    @Override
    protected HttpResponse<String> send(HttpRequest.Builder request) {
        return super.send(
                request.header("Authorization", "Bearer " + TestPublisherProperties.TRAINER_TOKEN));
    }

    @Test
    void callsWithoutOrWithTheWrongRoleAreRefused() {
        HttpResponse<String> anonymous =
                super.send(HttpRequest.newBuilder(uri("/api/v1/staging")).GET());
        assertProblem(anonymous, 401, "unauthorized");
        HttpResponse<String> trainerSaves =
                send(jsonRequest("POST", "/api/v1/checkpoints/save", CHECKPOINT));
        assertProblem(trainerSaves, 403, "forbidden");
        // Checkpoints are the owner's duty: an operator token is refused as well.
        for (String path : List.of("/api/v1/checkpoints/save", "/api/v1/checkpoints/restore")) {
            for (String token :
                    List.of(
                            TestPublisherProperties.OPERATOR_TOKEN,
                            TestPublisherProperties.TRAINER_TOKEN)) {
                HttpResponse<String> refused =
                        super.send(
                                jsonRequest("POST", path, CHECKPOINT)
                                        .header("Authorization", "Bearer " + token));
                assertProblem(refused, 403, "forbidden");
                assertThat(refused.body()).contains("allowed: [owner]").doesNotContain(token);
            }
        }
    }

    @Test
    void healthAndApiDocsAnswer() {
        assertHealthy();
        assertServesTheContract(
                "publisher.yaml", "weight-relay publisher API", "/api/v1/staging/reservations");
    }

    @Test
    void aScrapeTokenReadsMetricsAndNothingElse() {
        assertScrapeTokenReadsOnlyMetrics(
                TestPublisherProperties.METRICS_TOKEN, "/api/v1/staging/reservations");
        // The engine's bytes per transport and direction (docs/metrics.md); no tcp byte written.
        String scrape = getAs("/actuator/prometheus", TestPublisherProperties.METRICS_TOKEN).body();
        for (String direction : new String[] {"read", "written", "served_read", "served_written"}) {
            assertThat(scrape)
                    .contains(
                            "relay_publisher_transport_bytes_total{direction=\""
                                    + direction
                                    + "\",transport=\"tcp\"}");
        }
        assertThat(scrape)
                .contains(
                        "relay_publisher_transport_bytes_total{direction=\"read\",transport=\"local\"}")
                .contains(
                        "relay_publisher_transport_bytes_total{direction=\"written\",transport=\"tcp\"}"
                                + " 0.0");
    }

    @Test
    void whatTheContainerRefusesIsProblemJson() {
        assertContainerRejectionsAreProblems();
        assertChunkedBodyOverTheLimitIsRefused(
                "POST",
                "/api/v1/staging/reservations",
                TestPublisherProperties.TRAINER_TOKEN,
                1 << 20);
    }

    @Test
    void whatSpringRefusesIsProblemJsonToo() {
        assertTraceAndBadMultipartAreProblems(
                TestPublisherProperties.TRAINER_TOKEN, "/api/v1/staging");
        assertBodyIsRefusedAsInvalid(
                TestPublisherProperties.TRAINER_TOKEN,
                "POST",
                "/api/v1/models/m/generations/1/batches",
                "{\"reservationId\":\"r1\",\"tensors\":[null]}");
        // A directory no path can name (a NUL in it) was an InvalidPathException and a 500.
        assertBodyIsRefusedAsInvalid(
                TestPublisherProperties.OWNER_TOKEN,
                "POST",
                "/api/v1/checkpoints/restore",
                "{\"model\":\"m\",\"generation\":1,\"directory\":\"/tmp/a\\u0000b\"}");
    }

    @Test
    void badRequestIsProblemJson() {
        assertProblem(
                send(jsonRequest("POST", "/api/v1/staging/reservations", "{\"bytes\": -5}")),
                400,
                "invalid-request");
    }

    @Test
    void fullStagingIsBackPressure() {
        for (int i = 0; i < 4; i++) {
            assertThat(reserve(1 << 20).statusCode()).isEqualTo(200);
        }
        HttpResponse<String> full = reserve(1 << 20);
        assertProblem(full, 429, "staging-full");
        assertThat(full.headers().firstValue("Retry-After")).isPresent();
    }

    @Test
    void unknownGenerationStatusIsProblemJson() {
        assertProblem(get("/api/v1/models/m/generations/7"), 404, "generation-not-found");
    }

    private HttpResponse<String> reserve(long bytes) {
        return send(
                jsonRequest("POST", "/api/v1/staging/reservations", "{\"bytes\": " + bytes + "}"));
    }

    @Test
    void unknownPathIsProblemJson() {
        assertProblem(get("/api/v1/no-such-thing"), 404, "not-found");
    }
}
