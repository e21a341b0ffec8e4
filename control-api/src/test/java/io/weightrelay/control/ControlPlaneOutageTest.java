package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.GcReport;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.LeaseRequest;
import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.ParticipantState;
import io.weightrelay.api.control.model.SessionState;
import io.weightrelay.api.control.model.UpdatePreparation;
import io.weightrelay.api.control.model.UpdatePreparationRequest;
import io.weightrelay.api.control.model.UpdateSession;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.json.JsonMapper;

/**
 * The only control-api stops (its context closed, as a SIGKILL leaves Redis) for longer than the
 * loaders' TTL while an update is being prepared, and starts again on the same Redis and prefix:
 * the loaders whose registrations expired while nobody could receive their heartbeats are live for
 * one TTL after it is back, so their retried prepare joins the session and the session's check
 * names no one gone; a loader that expired while control-api was serving stays dead; and once the
 * grace is over, loaders that never beat again are dead.
 */
class ControlPlaneOutageTest extends ControlApiClientSupport {

    private static final long TTL_MS = 5_000;

    private static final String PREFIX = RedisTestSupport.uniqueKeyPrefix("outage");

    private static final String GROUP = "grp";

    private ConfigurableApplicationContext running;

    private final String model = newModel();

    @AfterEach
    void stop() {
        if (running != null) {
            running.close();
        }
        RedisTestSupport.deleteKeys(PREFIX);
    }

    private void start() {
        running =
                ControlApiContexts.start(
                        PREFIX,
                        Map.of(
                                "relay.registry.loader-ttl", TTL_MS + "ms",
                                "relay.registry.segment-ttl", TTL_MS + "ms"));
        json = running.getBean(JsonMapper.class);
    }

    private void kill() {
        running.close();
        running = null;
    }

    @Override
    protected int port() {
        return ((WebServerApplicationContext) running).getWebServer().getPort();
    }

    private HttpResponse<String> prepare(long generation, String instance) {
        UpdatePreparationRequest request = new UpdatePreparationRequest(instance, 60);
        request.setPhaseTimeoutSeconds(120);
        return call(
                "POST", sessionPath(model, generation, GROUP) + "/preparations", LOADER, request);
    }

    private List<String> liveLoaders() {
        return List.of(read("/api/v1/loaders?model=" + model, Loader[].class)).stream()
                .map(Loader::getInstance)
                .toList();
    }

    @Test
    void loadersWhoseHeartbeatsNobodyCouldReceiveAreLiveForOneTtlAfterControlApiIsBack()
            throws Exception {
        start();
        long g = publish(model, 1);
        String gone = model + "-gone";
        String a = model + "-a";
        String b = model + "-b";
        registerLoader(gone, compatLoader(model, GROUP, gone, 1));
        // expires while control-api serves: its heartbeats could have been received, and were not
        Thread.sleep(TTL_MS + 2_500);
        registerLoader(a, compatLoader(model, GROUP, a, 1));
        registerLoader(b, compatLoader(model, GROUP, b, 1));
        UpdatePreparation first = ok(prepare(g, a), UpdatePreparation.class);
        assertThat(first.getSession().getParticipants())
                .extracting(ParticipantState::getInstance)
                .containsExactly(a, b);

        kill();
        // longer than the TTL: every registration expires while nobody can receive a heartbeat
        Thread.sleep(TTL_MS + 1_500);
        start();

        HttpResponse<String> retried = prepare(g, b);
        assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);
        UpdatePreparation second = json.readValue(retried.body(), UpdatePreparation.class);
        assertThat(second.getSession().getState()).isEqualTo(SessionState.PREPARING);
        assertThat(second.getSession().getFailure()).isNull();
        UpdateSession touched = read(sessionPath(model, g, GROUP), UpdateSession.class);
        assertThat(touched.getFailure()).as("session touched after the restart").isNull();
        assertThat(touched.getState()).isEqualTo(SessionState.PREPARING);
        assertThat(liveLoaders()).containsExactlyInAnyOrder(a, b);
        assertThat(read("/api/v1/loaders/" + gone, Loader.class).getAlive()).isFalse();

        // one TTL after control-api is back, a loader that never beat again is dead
        Thread.sleep(TTL_MS + 1_500);
        assertThat(liveLoaders()).isEmpty();
        UpdateSession failed = read(sessionPath(model, g, GROUP), UpdateSession.class);
        assertThat(failed.getState()).isEqualTo(SessionState.RESUMED_OLD);
        assertThat(failed.getFailedInstance()).isEqualTo(a);
    }

    /**
     * A lease that lapses while no control-api instance serves (its holder could not renew it)
     * keeps its generation from garbage collection until one TTL after control-api is back (its
     * holder can renew it meanwhile); a lease that lapsed while control-api served does not.
     */
    @Test
    void aLeaseThatLapsedWhileNobodyCouldRenewItStillHoldsItsGenerationAgainstCollection()
            throws Exception {
        start();
        long g1 = publish(model, 1);
        long g2 = publish(model, 2);
        long g3 = publish(model, 3);
        // g1 is retired and read by a loader whose lease lapses during the outage
        ok(
                call("POST", path(g1) + "/leases", LOADER, new LeaseRequest("reader", 5)),
                io.weightrelay.api.control.model.Lease.class);
        // g2's lease lapses while control-api serves: collectable as soon as it lapsed
        ok(
                call("POST", path(g2) + "/leases", LOADER, new LeaseRequest("early", 1)),
                io.weightrelay.api.control.model.Lease.class);
        Thread.sleep(1_500);
        GcReport before = gc();
        assertThat(before.getCollected()).containsExactly(g2);
        assertThat(before.getKept()).contains(g1, g3);

        kill();
        Thread.sleep(TTL_MS + 1_500);
        start();

        GcReport after = gc();
        assertThat(after.getCollected())
                .as("collected right after control-api came back")
                .isEmpty();
        assertThat(after.getKept()).contains(g1, g3);
        assertThat(read(path(g1), Generation.class).getState()).isEqualTo(GenerationState.RETIRED);

        // one TTL after control-api is back, a lease its holder did not renew holds nothing
        Thread.sleep(TTL_MS + 1_500);
        assertThat(gc().getCollected()).containsExactly(g1);
    }

    private GcReport gc() {
        return ok(call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null), GcReport.class);
    }

    private String path(long generation) {
        return "/api/v1/models/" + model + "/generations/" + generation;
    }
}
