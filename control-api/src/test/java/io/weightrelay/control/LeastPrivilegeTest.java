package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.Lease;
import io.weightrelay.api.control.model.LeaseRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.api.control.model.UpdateSession;
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

    private static String lost(String segment) {
        return "{\"segment\":\"" + segment + "\",\"objects\":2,\"reason\":\"re-created\"}";
    }

    @Test
    void onlyTheOwnerOfASegmentHoldingAGenerationsObjectsMarksItLost() {
        String model = newModel();
        long mine = publishIn(model, 1, BOUND_SEGMENT);
        long theirs = publishIn(model, 2, OTHER_SEGMENT);
        String minePath = generationPath(model, mine) + "/lost";
        String theirsPath = generationPath(model, theirs) + "/lost";

        // A trainer token destroys no committed generation.
        assertProblem(call("POST", theirsPath, TRAINER, lost(OTHER_SEGMENT)), 403, "forbidden");
        assertProblem(call("POST", theirsPath, LOADER, lost(OTHER_SEGMENT)), 403, "forbidden");
        // A bound owner speaks for its own segment only...
        assertMismatch(
                call("POST", theirsPath, OWNER_BOUND, lost(OTHER_SEGMENT)),
                BOUND_SEGMENT,
                OTHER_SEGMENT);
        // ...and only about generations with objects in it.
        HttpResponse<String> none = call("POST", theirsPath, OWNER_BOUND, lost(BOUND_SEGMENT));
        assertProblem(none, 409, "segment-holds-no-objects");
        assertThat(none.body())
                .contains("\"segment\":\"" + BOUND_SEGMENT + "\"")
                .contains("generation " + theirs);
        assertProblem(
                call("POST", theirsPath, OPERATOR, lost(BOUND_SEGMENT)),
                409,
                "segment-holds-no-objects");
        assertThat(read(generationPath(model, theirs), Generation.class).getState())
                .as("no refused call touched it")
                .isEqualTo(GenerationState.ACTIVE);

        Generation lostMine =
                ok(call("POST", minePath, OWNER_BOUND, lost(BOUND_SEGMENT)), Generation.class);
        assertThat(lostMine.getState()).isEqualTo(GenerationState.LOST);
        assertThat(lostMine.getLostReason()).contains(BOUND_SEGMENT);
        // An operator may mark any segment's loss, an unbound owner token any segment's.
        assertThat(
                        ok(call("POST", theirsPath, OWNER, lost(OTHER_SEGMENT)), Generation.class)
                                .getState())
                .isEqualTo(GenerationState.LOST);
        assertThat(
                        ok(
                                        call("POST", theirsPath, OPERATOR, lost(OTHER_SEGMENT)),
                                        Generation.class)
                                .getState())
                .isEqualTo(GenerationState.LOST);
    }

    private static String session(String instances, String planId) {
        return "{\"instances\":["
                + instances
                + "]"
                + (planId == null ? "" : ",\"planId\":\"" + planId + "\"")
                + "}";
    }

    @Test
    void aLoaderStartsOnlyItsOwnGroupsSessionOnAPlanWithNoInventedInstance() {
        String model = newModel();
        long g = publish(model, 1);
        String stranger = model + "-other";
        registerLoader(BOUND_INSTANCE, compatLoader(model, "grp-own", "r0", 1));
        registerLoader(stranger, compatLoader(model, "grp-other", "r1", 1));
        try {
            PlanSummary own = resolvePlan(model, g, "grp-own");
            String ownSession = sessionPath(model, g, "grp-own");
            String otherSession = sessionPath(model, g, "grp-other");
            String me = "\"" + BOUND_INSTANCE + "\"";

            HttpResponse<String> noPlan = call("PUT", ownSession, LOADER_BOUND, session(me, null));
            assertProblem(noPlan, 400, "invalid-request");
            assertThat(noPlan.body()).contains("planId");

            // Another group's session, with invented instances: the token's loader is not in it.
            String ghosts = "\"ghost-1\",\"ghost-2\"";
            HttpResponse<String> foreign =
                    call("PUT", otherSession, LOADER_BOUND, session(ghosts, own.getPlanId()));
            assertProblem(foreign, 403, "identity-mismatch");
            assertThat(foreign.body())
                    .contains("\"boundTo\":\"" + BOUND_INSTANCE + "\"")
                    .contains("\"requested\":\"grp-other\"")
                    .doesNotContain(LOADER_BOUND);
            // Its own group, with an invented instance beside its own.
            HttpResponse<String> padded =
                    call(
                            "PUT",
                            ownSession,
                            LOADER_BOUND,
                            session(me + ",\"ghost-1\"", own.getPlanId()));
            assertProblem(padded, 409, "not-a-participant");
            assertThat(padded.body()).contains("ghost-1");
            // Its own group without itself.
            assertProblem(
                    call(
                            "PUT",
                            ownSession,
                            LOADER_BOUND,
                            session("\"" + stranger + "\"", own.getPlanId())),
                    403,
                    "identity-mismatch");
            // An unbound loader token invents no instance either, nor moves one between groups.
            assertProblem(
                    call("PUT", otherSession, LOADER, session(ghosts, own.getPlanId())),
                    409,
                    "not-a-participant");
            assertProblem(
                    call("PUT", otherSession, LOADER, session(me, own.getPlanId())),
                    409,
                    "not-a-participant");
            assertProblem(get(ownSession, OPERATOR), 404, "session-not-found");
            assertProblem(get(otherSession, OPERATOR), 404, "session-not-found");

            UpdateSession started =
                    ok(
                            call("PUT", ownSession, LOADER_BOUND, session(me, own.getPlanId())),
                            UpdateSession.class);
            assertThat(started.getPlanId()).isEqualTo(own.getPlanId());
        } finally {
            call("DELETE", "/api/v1/loaders/" + BOUND_INSTANCE, OPERATOR, null);
            call("DELETE", "/api/v1/loaders/" + stranger, OPERATOR, null);
        }
    }

    @Test
    void aBoundLoaderLeasesForItsOwnInstanceOnlyAndNoLongerThanTheLimit() {
        String model = newModel();
        long g = publish(model, 1);
        String leases = generationPath(model, g) + "/leases";
        assertMismatch(
                call("POST", leases, LOADER_BOUND, new LeaseRequest(OTHER_INSTANCE, 60)),
                BOUND_INSTANCE,
                OTHER_INSTANCE);
        assertMismatch(
                call("DELETE", leases + "/" + OTHER_INSTANCE, LOADER_BOUND, null),
                BOUND_INSTANCE,
                OTHER_INSTANCE);
        Lease own =
                ok(
                        call("POST", leases, LOADER_BOUND, new LeaseRequest(BOUND_INSTANCE, 3600)),
                        Lease.class);
        assertThat(own.getHolder()).isEqualTo(BOUND_INSTANCE);
        assertThat(call("DELETE", leases + "/" + BOUND_INSTANCE, LOADER_BOUND, null).statusCode())
                .isEqualTo(204);

        // relay.generations.max-lease-ttl (1h by default) bounds every lease, whoever asks.
        for (String token : new String[] {LOADER_BOUND, LOADER}) {
            HttpResponse<String> tooLong =
                    call("POST", leases, token, new LeaseRequest(BOUND_INSTANCE, 86400));
            assertProblem(tooLong, 400, "lease-ttl-too-long");
            assertThat(tooLong.body())
                    .contains("\"maxTtlSeconds\":3600")
                    .contains("\"ttlSeconds\":86400")
                    .contains("relay.generations.max-lease-ttl");
        }
        HttpResponse<String> prepare =
                call(
                        "POST",
                        sessionPath(model, g, "grp") + "/preparations",
                        LOADER_BOUND,
                        "{\"instance\":\"" + BOUND_INSTANCE + "\",\"leaseTtlSeconds\":86400}");
        assertProblem(prepare, 400, "lease-ttl-too-long");
    }
}
