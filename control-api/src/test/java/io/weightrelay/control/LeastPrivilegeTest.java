package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.SegmentRegistration;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * Each credential does its own duty and nothing more: an owner token bound to one segment acts for
 * that segment only, a loader token bound to one instance registers, heartbeats and reports for
 * that instance only (the refusals are 403 problems naming both identities and no token), and a
 * metrics token scrapes and reads nothing else. The trainer side of the admin URL is in {@link
 * CheckpointTest}.
 */
class LeastPrivilegeTest extends ControlApiTestSupport {

    private static final String OTHER_SEGMENT = "seg-other-h9";
    private static final String OTHER_INSTANCE = "inst-other-h9";

    private static SegmentRegistration registration() {
        return new SegmentRegistration("t0", "127.0.0.1:1", 1L << 20)
                .adminUrl("http://127.0.0.1:9");
    }

    private static void assertMismatch(HttpResponse<String> r, String bound, String requested) {
        assertProblem(r, 403, "identity-mismatch");
        assertThat(r.body())
                .contains("\"boundTo\":\"" + bound + "\"")
                .contains("\"requested\":\"" + requested + "\"")
                .contains("'" + bound + "'")
                .contains("'" + requested + "'")
                .doesNotContain(OWNER_BOUND)
                .doesNotContain(LOADER_BOUND);
    }

    @Test
    void anOwnerTokenBoundToASegmentActsForThatSegmentOnly() {
        SegmentOwner own =
                ok(putSegment(BOUND_SEGMENT, OWNER_BOUND, registration()), SegmentOwner.class);
        assertThat(own.getAdminUrl()).isEqualTo("http://127.0.0.1:9");
        ok(
                call("POST", "/api/v1/segments/" + BOUND_SEGMENT + "/heartbeat", OWNER_BOUND, null),
                SegmentOwner.class);
        ok(putSegment(OTHER_SEGMENT, OWNER, registration()), SegmentOwner.class);

        assertMismatch(
                putSegment(OTHER_SEGMENT, OWNER_BOUND, registration()),
                BOUND_SEGMENT,
                OTHER_SEGMENT);
        assertMismatch(
                call("POST", "/api/v1/segments/" + OTHER_SEGMENT + "/heartbeat", OWNER_BOUND, null),
                BOUND_SEGMENT,
                OTHER_SEGMENT);
        assertMismatch(
                call("DELETE", "/api/v1/segments/" + OTHER_SEGMENT, OWNER_BOUND, null),
                BOUND_SEGMENT,
                OTHER_SEGMENT);
        assertThat(get("/api/v1/segments/" + OTHER_SEGMENT, OPERATOR).statusCode())
                .as("the other owner's registration is untouched")
                .isEqualTo(200);
        // An owner token publishes nothing and reads nothing.
        assertProblem(
                call("POST", "/api/v1/models/m/generations", OWNER_BOUND, "{}"), 403, "forbidden");
        assertProblem(get("/api/v1/segments", OWNER_BOUND), 403, "forbidden");
        assertThat(
                        call("DELETE", "/api/v1/segments/" + BOUND_SEGMENT, OWNER_BOUND, null)
                                .statusCode())
                .isEqualTo(204);
        assertThat(call("DELETE", "/api/v1/segments/" + OTHER_SEGMENT, OPERATOR, null).statusCode())
                .isEqualTo(204);
    }

    @Test
    void loaderAsCredentialCannotRegisterHeartbeatOrReportForInstanceB() {
        assertMismatch(
                call("PUT", "/api/v1/loaders/" + OTHER_INSTANCE, LOADER_BOUND, "{}"),
                BOUND_INSTANCE,
                OTHER_INSTANCE);
        assertMismatch(
                call(
                        "POST",
                        "/api/v1/loaders/" + OTHER_INSTANCE + "/heartbeat",
                        LOADER_BOUND,
                        null),
                BOUND_INSTANCE,
                OTHER_INSTANCE);
        assertMismatch(
                call("DELETE", "/api/v1/loaders/" + OTHER_INSTANCE, LOADER_BOUND, null),
                BOUND_INSTANCE,
                OTHER_INSTANCE);
        String reports = "/api/v1/models/m-h9/generations/1/updates/none/reports";
        assertMismatch(
                call(
                        "POST",
                        reports,
                        LOADER_BOUND,
                        "{\"instance\":\"" + OTHER_INSTANCE + "\",\"phase\":\"PREPARED\"}"),
                BOUND_INSTANCE,
                OTHER_INSTANCE);
        // A prepare takes the lease for the instance it names: only for the token's own.
        assertMismatch(
                call(
                        "POST",
                        "/api/v1/models/m-h9/generations/1/updates/none/preparations",
                        LOADER_BOUND,
                        "{\"instance\":\"" + OTHER_INSTANCE + "\",\"leaseTtlSeconds\":5}"),
                BOUND_INSTANCE,
                OTHER_INSTANCE);
        // For its own instance the report passes the access layer (and meets no session here);
        // an unbound loader token still reports for any instance.
        assertProblem(
                call(
                        "POST",
                        reports,
                        LOADER_BOUND,
                        "{\"instance\":\"" + BOUND_INSTANCE + "\",\"phase\":\"PREPARED\"}"),
                404,
                "session-not-found");
        assertProblem(
                call(
                        "POST",
                        reports,
                        LOADER,
                        "{\"instance\":\"" + OTHER_INSTANCE + "\",\"phase\":\"PREPARED\"}"),
                404,
                "session-not-found");
        assertProblem(
                call(
                        "POST",
                        "/api/v1/loaders/" + BOUND_INSTANCE + "/heartbeat",
                        LOADER_BOUND,
                        null),
                404,
                "loader-not-found");
    }

    @Test
    void aMetricsTokenScrapesAndDoesNothingElse() {
        assertThat(get("/actuator/prometheus", METRICS).statusCode()).isEqualTo(200);
        assertThat(get("/actuator/prometheus", OPERATOR).statusCode()).isEqualTo(200);
        assertProblem(get("/actuator/prometheus", TRAINER), 403, "forbidden");
        assertProblem(get("/api/v1/segments", METRICS), 403, "forbidden");
        assertProblem(get("/actuator/metrics", METRICS), 403, "forbidden");
        assertProblem(putSegment(OTHER_SEGMENT, METRICS, registration()), 403, "forbidden");
    }
}
