package io.weightrelay.control;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.CheckpointRequest;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.RestoreRequest;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.api.control.model.StoredFragment;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * Checkpoints call exactly the segment owners whose segments hold the generation's objects (as the
 * store's directory says), report their times, and restore brings a lost generation back. The
 * owners here are stand-ins for publisher-service's owner API backed by real segments.
 */
class CheckpointTest extends ControlApiTestSupport {

    @Autowired StringRedisTemplate redis;

    /** A segment owner: a real segment plus a stub of the publisher's owner endpoints. */
    private final class Owner implements AutoCloseable {
        final TestStore store = new TestStore(STORE_PREFIX);
        final HttpServer http;
        final AtomicInteger saves = new AtomicInteger();
        final AtomicInteger restores = new AtomicInteger();
        final List<String> authorizations = new java.util.concurrent.CopyOnWriteArrayList<>();
        final List<StoredFragment> held = new ArrayList<>();
        final double seconds;
        final java.net.http.HttpResponse<String> registration;

        Owner(double seconds) throws IOException {
            this(seconds, OWNER);
        }

        /** Registers the segment and the stub's admin URL with {@code token}. */
        Owner(double seconds, String token) throws IOException {
            this.seconds = seconds;
            http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            http.createContext(
                    "/api/v1/checkpoints/save",
                    exchange -> {
                        authorizations.add(
                                String.valueOf(
                                        exchange.getRequestHeaders().getFirst("Authorization")));
                        saves.incrementAndGet();
                        reply(exchange, held.size());
                    });
            http.createContext(
                    "/api/v1/checkpoints/restore",
                    exchange -> {
                        authorizations.add(
                                String.valueOf(
                                        exchange.getRequestHeaders().getFirst("Authorization")));
                        restores.incrementAndGet();
                        held.forEach(f -> store.put(f.getKey(), f.getBytes()));
                        reply(exchange, held.size());
                    });
            http.start();
            registration =
                    call(
                            "PUT",
                            "/api/v1/segments/" + store.segmentName(),
                            token,
                            new SegmentRegistration("t0", "127.0.0.1:1", 4L << 20)
                                    .adminUrl(adminUrl()));
            if (OWNER.equals(token)) {
                ok(registration, io.weightrelay.api.control.model.SegmentOwner.class);
            }
        }

        String adminUrl() {
            return "http://127.0.0.1:" + http.getAddress().getPort();
        }

        void hold(StoredFragment f) {
            held.add(f);
            store.put(f.getKey(), f.getBytes());
        }

        private void reply(com.sun.net.httpserver.HttpExchange exchange, int objects)
                throws IOException {
            exchange.getRequestBody().readAllBytes();
            byte[] body =
                    json.writeValueAsString(
                                    Map.of(
                                            "segment",
                                            store.segmentName(),
                                            "objects",
                                            objects,
                                            "bytes",
                                            4096L * objects,
                                            "seconds",
                                            seconds))
                            .getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        }

        @Override
        public void close() {
            http.stop(0);
            store.close();
        }
    }

    @Test
    void saveCallsOnlyTheOwnersHoldingTheGenerationAndRestoreBringsItBack() throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        try (Owner a = new Owner(0.5);
                Owner b = new Owner(1.5);
                Owner idle = new Owner(9.0)) {
            List<StoredFragment> fragments = fragments(model, g1);
            for (int i = 0; i < fragments.size(); i++) {
                (i % 2 == 0 ? a : b).hold(fragments.get(i));
            }

            CheckpointReport report =
                    ok(
                            call(
                                    "POST",
                                    "/api/v1/models/"
                                            + model
                                            + "/generations/"
                                            + g1
                                            + "/checkpoints",
                                    OPERATOR,
                                    new CheckpointRequest("/tmp/ckpt")),
                            CheckpointReport.class);
            assertThat(report.getOwners())
                    .extracting(OwnerCheckpoint::getSegment)
                    .containsExactlyInAnyOrder(a.store.segmentName(), b.store.segmentName());
            assertThat(report.getOwners()).allSatisfy(o -> assertThat(o.getError()).isNull());
            assertThat(report.getMeanSeconds()).isEqualTo(1.0);
            assertThat(report.getWorstSeconds()).isEqualTo(1.5);
            assertThat(a.saves.get()).isEqualTo(1);
            assertThat(b.saves.get()).isEqualTo(1);
            assertThat(idle.saves.get()).as("an owner without objects is never called").isZero();

            // Lose the generation's objects, then restore them from the checkpoint.
            // (dropping the directory entries is what a store restart without the segments does)
            for (StoredFragment f : fragments) {
                redis.delete(STORE_PREFIX + "obj:" + f.getKey());
            }
            long g2 = publish(model, 2);
            Generation restored =
                    ok(
                            call(
                                    "POST",
                                    "/api/v1/models/" + model + "/checkpoints/restore",
                                    OPERATOR,
                                    new RestoreRequest("/tmp/ckpt", g1)),
                            Generation.class);
            assertThat(restored.getState()).isEqualTo(GenerationState.ACTIVE);
            assertThat(a.restores.get()).isEqualTo(1);
            assertThat(b.restores.get()).isEqualTo(1);
            assertThat(idle.restores.get()).isZero();
            // Owners are called with the owner credential, and with nothing else.
            assertThat(a.authorizations).hasSize(2).containsOnly("Bearer " + OWNER_CALL);
            assertThat(b.authorizations).hasSize(2).containsOnly("Bearer " + OWNER_CALL);
            for (StoredFragment f : fragments) {
                assertThat(a.store.exists(f.getKey())).isTrue();
            }
            assertThat(
                            ok(
                                            get(
                                                    "/api/v1/models/"
                                                            + model
                                                            + "/generations/"
                                                            + g2,
                                                    OPERATOR),
                                            Generation.class)
                                    .getState())
                    .isEqualTo(GenerationState.RETIRED);
        }
    }

    @Test
    void onlyAnAdminUrlAnOwnerRegisteredIsEverCalled() throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        try (Owner rogue = new Owner(0.1, TRAINER);
                Owner legacy = new Owner(0.1, OWNER)) {
            // A trainer token cannot register an admin URL (control-api would send its owner
            // credential there), and the refusal names the segment but no credential.
            assertThat(rogue.registration.statusCode()).isEqualTo(403);
            assertThat(rogue.registration.body())
                    .contains("https://weightrelay.io/problems/forbidden")
                    .contains("may not register an admin URL")
                    .contains(rogue.store.segmentName())
                    .doesNotContain(OWNER_CALL)
                    .doesNotContain(TRAINER);
            assertThat(get("/api/v1/segments/" + rogue.store.segmentName(), OPERATOR).statusCode())
                    .as("nothing was registered")
                    .isEqualTo(404);
            // Without an admin URL a trainer token may still register the segment (a publisher
            // configured before the owner role): it has no admin URL then.
            io.weightrelay.api.control.model.SegmentOwner plain =
                    ok(
                            call(
                                    "PUT",
                                    "/api/v1/segments/" + rogue.store.segmentName(),
                                    TRAINER,
                                    new SegmentRegistration("t0", "127.0.0.1:1", 4L << 20)),
                            io.weightrelay.api.control.model.SegmentOwner.class);
            assertThat(plain.getAdminUrl()).isNull();
            // A registration stored before the owner role (no registeredBy) has no admin URL.
            redis.opsForHash()
                    .delete(PREFIX + "segment:" + legacy.store.segmentName(), "registeredBy");
            assertThat(
                            ok(
                                            get(
                                                    "/api/v1/segments/"
                                                            + legacy.store.segmentName(),
                                                    OPERATOR),
                                            io.weightrelay.api.control.model.SegmentOwner.class)
                                    .getAdminUrl())
                    .isNull();
            List<StoredFragment> fragments = fragments(model, g1);
            for (int i = 0; i < fragments.size(); i++) {
                (i % 2 == 0 ? rogue : legacy).hold(fragments.get(i));
            }
            java.net.http.HttpResponse<String> save =
                    call(
                            "POST",
                            "/api/v1/models/" + model + "/generations/" + g1 + "/checkpoints",
                            OPERATOR,
                            new CheckpointRequest("/tmp/ckpt-h9"));
            assertThat(save.body()).contains("owner has no admin URL");
            assertThat(rogue.saves.get() + legacy.saves.get()).isZero();
            assertThat(rogue.authorizations).isEmpty();
            assertThat(legacy.authorizations).isEmpty();
        }
    }
}
