package io.weightrelay.control.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.weightrelay.api.control.model.CheckpointManifest;
import io.weightrelay.api.control.model.CheckpointObject;
import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.CheckpointRequest;
import io.weightrelay.api.control.model.CheckpointStatus;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.RestoreRequest;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.api.control.model.StoredFragment;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.TestStore;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * Checkpoints call exactly the segment owners whose segments hold the generation's objects (as the
 * store's directory says), report their times, write a self-contained checkpoint (manifest, then
 * the completion marker) only when every owner saved, and restore brings a generation back into a
 * Redis that has forgotten it, keeping its id. The owners here are stand-ins for
 * publisher-service's owner API backed by real segments: they write one file per owner and re-store
 * what they are assigned.
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
        final List<String> restored = new java.util.concurrent.CopyOnWriteArrayList<>();
        final double seconds;
        final java.net.http.HttpResponse<String> registration;
        volatile boolean failSaves;
        // The registry's segment TTL is 2 s here: keep alive as a publisher would.
        final java.util.concurrent.ScheduledExecutorService heartbeats =
                java.util.concurrent.Executors.newSingleThreadScheduledExecutor();

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
                        OwnerCheckpointRequest request = received(exchange, saves);
                        if (failSaves) {
                            problem(exchange, 409, "object " + held.get(0).getKey() + " differs");
                            return;
                        }
                        // One file of the held objects' bytes, as the publisher writes it.
                        String file = store.segmentName() + ".bin";
                        List<OwnerCheckpointObject> saved = new ArrayList<>();
                        long offset = 0;
                        for (StoredFragment f : held) {
                            saved.add(
                                    new OwnerCheckpointObject()
                                            .key(f.getKey())
                                            .size(f.getBytes())
                                            .checksum(request.getChecksums().get(f.getKey()))
                                            ._file(file)
                                            .offset(offset));
                            offset += f.getBytes();
                        }
                        Files.write(
                                Path.of(request.getDirectory()).resolve(file),
                                new byte[(int) offset]);
                        reply(exchange, result(held.size(), offset)._file(file).saved(saved));
                    });
            http.createContext(
                    "/api/v1/checkpoints/restore",
                    exchange -> {
                        OwnerCheckpointRequest request = received(exchange, restores);
                        long bytes = 0;
                        for (OwnerCheckpointObject o : request.getObjects()) {
                            assertThat(Path.of(request.getDirectory()).resolve(o.getFile()))
                                    .exists();
                            if (!store.exists(o.getKey())) {
                                store.put(o.getKey(), o.getSize());
                                restored.add(o.getKey());
                                bytes += o.getSize();
                            }
                        }
                        reply(exchange, result(request.getObjects().size(), bytes));
                    });
            http.start();
            registration =
                    putSegment(
                            store.segmentName(),
                            token,
                            new SegmentRegistration("t0", "127.0.0.1:1", 4L << 20)
                                    .adminUrl(adminUrl()));
            if (OWNER.equals(token)) {
                ok(registration, io.weightrelay.api.control.model.SegmentOwner.class);
                heartbeats.scheduleWithFixedDelay(
                        () ->
                                call(
                                        "POST",
                                        "/api/v1/segments/" + store.segmentName() + "/heartbeat",
                                        OWNER,
                                        null),
                        300,
                        300,
                        java.util.concurrent.TimeUnit.MILLISECONDS);
            }
        }

        OwnerCheckpointResult result(long objects, long bytes) {
            return new OwnerCheckpointResult()
                    .segment(store.segmentName())
                    .objects(objects)
                    .bytes(bytes)
                    .seconds(seconds);
        }

        String adminUrl() {
            return "http://127.0.0.1:" + http.getAddress().getPort();
        }

        void hold(StoredFragment f) {
            held.add(f);
            store.put(f.getKey(), f.getBytes());
        }

        /** Counts a call, keeps the credential it came with, and reads its request. */
        private OwnerCheckpointRequest received(
                com.sun.net.httpserver.HttpExchange exchange, AtomicInteger calls)
                throws IOException {
            authorizations.add(
                    String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
            calls.incrementAndGet();
            return json.readValue(
                    exchange.getRequestBody().readAllBytes(), OwnerCheckpointRequest.class);
        }

        private void reply(com.sun.net.httpserver.HttpExchange exchange, Object answer)
                throws IOException {
            byte[] body = json.writeValueAsString(answer).getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        }

        private void problem(
                com.sun.net.httpserver.HttpExchange exchange, int status, String detail)
                throws IOException {
            byte[] body =
                    json.writeValueAsString(
                                    Map.of(
                                            "type",
                                            "https://weightrelay.io/problems/checkpoint-corrupt",
                                            "status",
                                            status,
                                            "detail",
                                            detail))
                            .getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/problem+json");
            exchange.sendResponseHeaders(status, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        }

        @Override
        public void close() {
            heartbeats.shutdownNow();
            http.stop(0);
            store.close();
        }
    }

    /**
     * Forgets everything Redis knows of {@code model}: its generations, manifests, objects,
     * checkpoint records, counters and its store directory entries, as a Redis restarted empty
     * would (only this model's keys: other tests share the prefix).
     */
    private void forget(String model) {
        List<String> doomed = new ArrayList<>();
        var options =
                org.springframework.data.redis.core.ScanOptions.scanOptions()
                        .match(PREFIX + "*" + model + "*")
                        .count(1000)
                        .build();
        try (var cursor = redis.scan(options)) {
            cursor.forEachRemaining(doomed::add);
        }
        assertThat(doomed).isNotEmpty();
        redis.delete(doomed);
        redis.opsForSet().remove(PREFIX + "models", model);
    }

    private CheckpointReport save(String model, long generation, Path dir) {
        return ok(saveCall(model, generation, dir), CheckpointReport.class);
    }

    private java.net.http.HttpResponse<String> saveCall(String model, long generation, Path dir) {
        return call(
                "POST",
                "/api/v1/models/" + model + "/generations/" + generation + "/checkpoints",
                OPERATOR,
                new CheckpointRequest(dir.toString()));
    }

    private java.net.http.HttpResponse<String> restoreCall(String model, Path dir) {
        return call(
                "POST",
                "/api/v1/models/" + model + "/checkpoints/restore",
                OPERATOR,
                new RestoreRequest(dir.toString()));
    }

    @Test
    void saveCallsOnlyTheOwnersHoldingTheGenerationAndRestoreNeedsNoRedisRecord(@TempDir Path dir)
            throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        try (Owner a = new Owner(0.5);
                Owner b = new Owner(1.5);
                Owner idle = new Owner(9.0)) {
            List<StoredFragment> fragments = fragments(model, g1);
            for (int i = 0; i < fragments.size(); i++) {
                (i % 2 == 0 ? a : b).hold(fragments.get(i));
            }

            CheckpointReport report = save(model, g1, dir);
            assertThat(report.getOwners())
                    .extracting(OwnerCheckpoint::getSegment)
                    .containsExactlyInAnyOrder(a.store.segmentName(), b.store.segmentName());
            assertThat(report.getOwners()).allSatisfy(o -> assertThat(o.getError()).isNull());
            assertThat(report.getMeanSeconds()).isEqualTo(1.0);
            assertThat(report.getWorstSeconds()).isEqualTo(1.5);
            long total = fragments.stream().mapToLong(StoredFragment::getBytes).sum();
            assertThat(report.getBytes()).isEqualTo(total);
            assertThat(a.saves.get()).isEqualTo(1);
            assertThat(b.saves.get()).isEqualTo(1);
            assertThat(idle.saves.get()).as("an owner without objects is never called").isZero();
            // Segments carry their role: a storage unit says so, others default to trainer.
            io.weightrelay.api.control.model.SegmentOwner unit =
                    ok(
                            putSegment(
                                    idle.store.segmentName(),
                                    OWNER,
                                    new SegmentRegistration("t0", "127.0.0.1:1", 4L << 20)
                                            .adminUrl(idle.adminUrl())
                                            .role(
                                                    io.weightrelay.api.control.model.SegmentRole
                                                            .STORAGE_UNIT)),
                            io.weightrelay.api.control.model.SegmentOwner.class);
            assertThat(unit.getRole())
                    .isEqualTo(io.weightrelay.api.control.model.SegmentRole.STORAGE_UNIT);
            assertThat(
                            ok(
                                            get(
                                                    "/api/v1/segments/" + a.store.segmentName(),
                                                    OPERATOR),
                                            io.weightrelay.api.control.model.SegmentOwner.class)
                                    .getRole())
                    .isEqualTo(io.weightrelay.api.control.model.SegmentRole.TRAINER);

            // The checkpoint describes itself: record, manifest, every object's place, checksum.
            assertThat(dir.resolve("COMPLETE")).exists();
            CheckpointManifest manifest =
                    json.readValue(
                            Files.readAllBytes(dir.resolve("checkpoint.json")),
                            CheckpointManifest.class);
            assertThat(manifest.getFormat()).isEqualTo("wr.checkpoint.v1");
            assertThat(manifest.getGeneration()).isEqualTo(g1);
            assertThat(manifest.getTrainerStep()).isEqualTo(1);
            assertThat(manifest.getManifest().getModel()).isEqualTo(model);
            assertThat(manifest.getDtypes()).isNotEmpty();
            assertThat(manifest.getObjects()).hasSize(fragments.size());
            assertThat(manifest.getObjects())
                    .allSatisfy(
                            o -> {
                                assertThat(o.getChecksum()).isEqualTo("crc32c:0badf00d");
                                assertThat(dir.resolve(o.getFile())).exists();
                            });
            assertThat(manifest.getObjects().stream().map(CheckpointObject::getFile).distinct())
                    .containsExactlyInAnyOrder(
                            a.store.segmentName() + ".bin", b.store.segmentName() + ".bin");

            // Operators see where and when it was saved, and each owner's time.
            CheckpointStatus status =
                    read(generationPath(model, g1) + "/checkpoints", CheckpointStatus.class);
            assertThat(status.getSaved()).isTrue();
            assertThat(status.getDirectory()).isEqualTo(dir.toString());
            assertThat(status.getSavedAt()).isNotNull();
            assertThat(status.getOwners()).hasSize(2);
            assertThat(status.getWorstSeconds()).isEqualTo(1.5);

            // Redis forgets the model entirely and the objects are gone: restore from the
            // directory alone, into the owners present, byte-balanced.
            forget(model);
            assertThat(a.store.exists(fragments.get(0).getKey())).isFalse();
            Generation restored = ok(restoreCall(model, dir), Generation.class);
            assertThat(restored.getGeneration()).isEqualTo(g1);
            assertThat(restored.getState()).isEqualTo(GenerationState.ACTIVE);
            assertThat(restored.getObjectsRegistered()).isEqualTo(fragments.size());
            assertThat(a.restored.size() + b.restored.size() + idle.restored.size())
                    .as("one copy of each object")
                    .isEqualTo(fragments.size());
            for (StoredFragment f : fragments) {
                assertThat(a.store.exists(f.getKey())).as(f.getKey()).isTrue();
            }
            assertThat(
                            read(
                                            "/api/v1/models/" + model + "/generations/active",
                                            Generation.class)
                                    .getGeneration())
                    .isEqualTo(g1);
            assertThat(fragments(model, g1)).hasSize(fragments.size());
            // The next publish continues after the restored id.
            long g2 = publish(model, 2);
            assertThat(g2).isEqualTo(g1 + 1);
            // Restoring the older one again while a newer one is active leaves it retired.
            Generation again = ok(restoreCall(model, dir), Generation.class);
            assertThat(again.getState()).isEqualTo(GenerationState.RETIRED);
            assertThat(
                            read(
                                            "/api/v1/models/" + model + "/generations/active",
                                            Generation.class)
                                    .getGeneration())
                    .isEqualTo(g2);
            // Owners are called with the owner credential, and with nothing else.
            assertThat(a.authorizations).containsOnly("Bearer " + OWNER_CALL);
            assertThat(b.authorizations).containsOnly("Bearer " + OWNER_CALL);
            assertThat(idle.authorizations).containsOnly("Bearer " + OWNER_CALL);
        }
    }

    @Test
    void aFailedOwnerFailsTheSaveAndLeavesNoMarker(@TempDir Path dir) throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        try (Owner a = new Owner(0.1);
                Owner b = new Owner(0.1)) {
            List<StoredFragment> fragments = fragments(model, g1);
            for (int i = 0; i < fragments.size(); i++) {
                (i % 2 == 0 ? a : b).hold(fragments.get(i));
            }
            save(model, g1, dir);
            assertThat(dir.resolve("COMPLETE")).exists();
            // A second save into the same directory with one owner failing: the old marker is
            // gone and no new one is written, so nothing restores from a mixed directory.
            b.failSaves = true;
            java.net.http.HttpResponse<String> failed = saveCall(model, g1, dir);
            assertThat(failed.statusCode()).as(failed.body()).isEqualTo(409);
            assertThat(failed.body())
                    .contains("/problems/checkpoint-failed")
                    .contains(b.store.segmentName())
                    .contains(b.held.get(0).getKey());
            assertThat(dir.resolve("COMPLETE")).doesNotExist();
            assertThat(dir.resolve("checkpoint.json")).doesNotExist();
            java.net.http.HttpResponse<String> restore = restoreCall(model, dir);
            assertThat(restore.statusCode()).isEqualTo(409);
            assertThat(restore.body()).contains("/problems/checkpoint-incomplete");
            assertThat(
                            read(generationPath(model, g1) + "/checkpoints", CheckpointStatus.class)
                                    .getSaved())
                    .isFalse();
            // A manifest changed after the save is refused too.
            b.failSaves = false;
            save(model, g1, dir);
            Files.writeString(
                    dir.resolve("checkpoint.json"),
                    Files.readString(dir.resolve("checkpoint.json"))
                            .replace("\"trainerStep\":1", "\"trainerStep\":7"));
            java.net.http.HttpResponse<String> tampered = restoreCall(model, dir);
            assertThat(tampered.statusCode()).isEqualTo(409);
            assertThat(tampered.body()).contains("does not vouch");
        }
    }

    @Test
    void onlyAnAdminUrlAnOwnerRegisteredIsEverCalled(@TempDir Path dir) throws Exception {
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
                            putSegment(
                                    rogue.store.segmentName(),
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
                            new CheckpointRequest(dir.toString()));
            assertThat(save.statusCode()).isEqualTo(409);
            assertThat(save.body()).contains("owner has no admin URL");
            assertThat(rogue.saves.get() + legacy.saves.get()).isZero();
            assertThat(rogue.authorizations).isEmpty();
            assertThat(legacy.authorizations).isEmpty();
        }
    }
}
