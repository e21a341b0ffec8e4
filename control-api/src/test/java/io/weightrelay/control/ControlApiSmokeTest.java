package io.weightrelay.control;

import org.junit.jupiter.api.Test;

/**
 * Starts the whole service on a loopback port and checks what every operator and client meets
 * first.
 */
class ControlApiSmokeTest extends ControlApiTestSupport {

    @Test
    void healthAndApiDocsAnswerWithoutToken() {
        assertHealthy();
        assertServesOpenApi("/api/v1/models/{model}/generations");
    }

    @Test
    void badRequestIsProblemJson() {
        assertProblem(
                get("/api/v1/models/bad%20model!/generations/active", OPERATOR),
                400,
                "invalid-request");
    }

    @Test
    void unknownPathIsProblemJson() {
        assertProblem(get("/api/v1/no-such-thing", OPERATOR), 404, "not-found");
    }

    @Test
    void everyOtherPathNeedsAToken() {
        assertProblem(get("/api/v1/segments"), 401, "unauthorized");
        assertProblem(get("/api/v1/segments", "not-a-token-of-anyone"), 401, "unauthorized");
        assertProblem(get("/actuator/metrics", LOADER), 403, "forbidden");
    }
}
