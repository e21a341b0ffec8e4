package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.GcReport;
import io.weightrelay.api.control.model.Lease;
import io.weightrelay.api.control.model.LeaseRequest;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderHeartbeat;
import io.weightrelay.api.control.model.LoaderOverview;
import io.weightrelay.api.control.model.PhaseReport;
import io.weightrelay.api.control.model.ReportedPhase;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.api.control.model.UpdateSessionRequest;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.json.JsonMapper;

/**
 * Two control-api replicas on one Redis and key prefix, one started with its clock ten minutes fast
 * and one ten minutes slow ({@code relay.clock.skew}): what one writes, the other judges the same
 * as the writer would. A loader registered through one is live through the other (and its heartbeat
 * minutes old through neither); a lease taken through one holds against a collection through the
 * other for its TTL and no longer; an update session started through one runs to DONE with its
 * reports spread over both, no phase timing out early.
 */
class ClockSkewTest extends ControlApiClientSupport {

    private static final Duration SKEW = Duration.ofMinutes(10);

    private static final String PREFIX = RedisTestSupport.uniqueKeyPrefix("clock-skew");

    private static ConfigurableApplicationContext fast;
    private static ConfigurableApplicationContext slow;

    /** The replica the next request goes to. */
    private ConfigurableApplicationContext target;

    private final String model = newModel();

    @BeforeAll
    static void startReplicas() {
        fast = replica(SKEW);
        slow = replica(SKEW.negated());
    }

    @AfterAll
    static void stopReplicas() {
        for (ConfigurableApplicationContext c : new ConfigurableApplicationContext[] {fast, slow}) {
            if (c != null) {
                c.close();
            }
        }
        RedisTestSupport.deleteKeys(PREFIX);
    }

    private static ConfigurableApplicationContext replica(Duration skew) {
        return ControlApiContexts.start(
                PREFIX,
                Map.of(
                        "relay.registry.loader-ttl", "60s",
                        "relay.registry.segment-ttl", "60s",
                        "relay.clock.skew", skew.toString()));
    }

    private ClockSkewTest on(ConfigurableApplicationContext replica) {
        target = replica;
        if (json == null) {
            json = replica.getBean(JsonMapper.class);
        }
        return this;
    }

    @Override
    protected int port() {
        return ((WebServerApplicationContext) target).getWebServer().getPort();
    }

    @Test
    void aLoaderOrOwnerRegisteredThroughOneReplicaIsLiveThroughTheOther() {
        String early = model + "-slow";
        String late = model + "-fast";
        on(slow).registerLoader(early, compatLoader(model, "grp", early, 1));
        on(fast).registerLoader(late, compatLoader(model, "grp", late, 1));
        for (ConfigurableApplicationContext replica : List.of(fast, slow)) {
            List<Loader> live =
                    List.of(on(replica).read("/api/v1/loaders?model=" + model, Loader[].class));
            assertThat(live).extracting(Loader::getInstance).containsExactlyInAnyOrder(early, late);
            for (String instance : List.of(early, late)) {
                Loader one = on(replica).read("/api/v1/loaders/" + instance, Loader.class);
                assertThat(one.getAlive()).as(instance + " through " + replica).isTrue();
            }
            for (LoaderOverview o :
                    on(replica)
                            .read(
                                    "/api/v1/operator/loaders?after=" + model + "&limit=2",
                                    LoaderOverview[].class)) {
                assertThat(o.getAlive()).as(o.getInstance()).isTrue();
                assertThat(o.getHeartbeatAgeMs()).as(o.getInstance()).isLessThan(30_000L);
            }
        }
        LoaderHeartbeat beat =
                ok(
                        on(fast).call(
                                        "POST",
                                        "/api/v1/loaders/" + early + "/heartbeat",
                                        LOADER,
                                        null),
                        LoaderHeartbeat.class);
        assertThat(Duration.between(beat.getLastHeartbeat(), OffsetDateTime.now()).abs())
                .isLessThan(Duration.ofMinutes(1));

        String segment = model + "-seg";
        ok(
                on(slow).putSegment(
                                segment,
                                OWNER,
                                new SegmentRegistration("n0", "127.0.0.1:1", 1L << 20)),
                SegmentOwner.class);
        SegmentOwner owner = on(fast).read("/api/v1/segments/" + segment, SegmentOwner.class);
        assertThat(owner.getAlive()).isTrue();
    }

    @Test
    void aLeaseHoldsForItsTtlWhicheverReplicaTookItOrCollects() throws Exception {
        long g1 = on(fast).publish(model, 1);
        long g2 = on(slow).publish(model, 2);
        long g3 = on(fast).publish(model, 3);
        String path = "/api/v1/models/" + model + "/generations/";
        Lease held =
                ok(
                        on(slow).call(
                                        "POST",
                                        path + g1 + "/leases",
                                        LOADER,
                                        new LeaseRequest("holder-a", 120)),
                        Lease.class);
        ok(
                on(fast).call(
                                "POST",
                                path + g2 + "/leases",
                                LOADER,
                                new LeaseRequest("holder-b", 1)),
                Lease.class);

        // the slow replica's 120 s lease holds against the fast replica's collection
        GcReport report =
                ok(
                        on(fast).call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null),
                        GcReport.class);
        assertThat(report.getCollected()).doesNotContain(g1);
        assertThat(report.getKept()).contains(g1, g3);
        assertThat(Duration.between(OffsetDateTime.now(), held.getExpiresAt()))
                .isBetween(Duration.ofSeconds(100), Duration.ofSeconds(121));

        // the fast replica's 1 s lease is over after a second for the slow replica too
        Thread.sleep(1500);
        report =
                ok(
                        on(slow).call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null),
                        GcReport.class);
        assertThat(report.getCollected()).contains(g2).doesNotContain(g1);
    }

    @Test
    void anUpdateSessionRunsToDoneWithItsReportsSpreadOverBothReplicas() {
        long g = on(fast).publish(model, 1);
        String a = model + "-a";
        String b = model + "-b";
        Map<String, Long> epochs = new HashMap<>();
        epochs.put(a, on(slow).registerLoader(a, compatLoader(model, "grp", a, 1)).getEpoch());
        epochs.put(b, on(fast).registerLoader(b, compatLoader(model, "grp", b, 1)).getEpoch());
        String planId = on(slow).resolvePlan(model, g, "grp").getPlanId();
        UpdateSessionRequest request = new UpdateSessionRequest(List.of(a, b), planId);
        request.setPhaseTimeoutSeconds(120);
        String session = sessionPath(model, g, "grp");
        ok(on(slow).call("PUT", session, LOADER, request), UpdateSession.class);

        List<ConfigurableApplicationContext> replicas = List.of(fast, slow);
        int turn = 0;
        for (ReportedPhase phase : EVERY_PHASE) {
            for (String instance : List.of(a, b)) {
                PhaseReport report = new PhaseReport(instance, phase);
                report.setEpoch(epochs.get(instance));
                UpdateSession after =
                        ok(
                                on(replicas.get(turn++ % 2))
                                        .call("POST", session + "/reports", LOADER, report),
                                UpdateSession.class);
                assertThat(after.getFailure()).as(phase + " of " + instance).isNull();
                // a touch through either replica fails nothing: no phase timed out, no loader gone
                UpdateSession touched =
                        ok(on(replicas.get(turn % 2)).get(session, LOADER), UpdateSession.class);
                assertThat(touched.getFailure()).as("touched after " + phase).isNull();
            }
        }
        UpdateSession done = on(fast).read(session, UpdateSession.class);
        assertThat(done.getState()).isEqualTo(SessionState.DONE);
        assertThat(done.getFailedInstance()).isNull();
    }
}
