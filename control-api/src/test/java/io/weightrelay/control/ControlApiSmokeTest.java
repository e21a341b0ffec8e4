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
        assertServesTheContract(
                "control-api.yaml",
                "weight-relay control API",
                "/api/v1/models/{model}/generations");
    }

    @Test
    void badRequestIsProblemJson() {
        assertProblem(
                get("/api/v1/models/bad%20model!/generations/active", OPERATOR),
                400,
                "invalid-request");
    }

    @Test
    void whatTheContainerRefusesIsProblemJson() {
        assertContainerRejectionsAreProblems();
        assertChunkedBodyOverTheLimitIsRefused(
                "POST", "/api/v1/models/m/generations", TRAINER, 1 << 20);
    }

    @Test
    void whatSpringRefusesIsProblemJsonToo() {
        assertTraceAndBadMultipartAreProblems(OPERATOR, "/api/v1/segments");
        assertUnparsableQueryIsProblem(OPERATOR, "/api/v1/models/m/generations?limit=5");
        assertBodyIsRefusedAsInvalid(
                LOADER,
                "PUT",
                "/api/v1/loaders/inst-null",
                "{\"model\":\"m\",\"group\":\"g\",\"node\":\"n0\",\"workers\":[null]}");
        // A directory no path can name (a NUL in it) is 400, not an InvalidPathException's 500.
        assertBodyIsRefusedAsInvalid(
                OPERATOR,
                "POST",
                "/api/v1/models/m/checkpoints/restore",
                "{\"directory\":\"/tmp/a\\u0000b\"}");
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
