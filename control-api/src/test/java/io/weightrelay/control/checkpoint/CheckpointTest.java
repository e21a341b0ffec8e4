package io.weightrelay.control.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.weightrelay.api.common.model.StoredFragment;
import io.weightrelay.api.control.model.CheckpointManifest;
import io.weightrelay.api.control.model.CheckpointReport;
import io.weightrelay.api.control.model.CheckpointRequest;
import io.weightrelay.api.control.model.CheckpointStatus;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.GenerationState;
import io.weightrelay.api.control.model.OwnerCheckpoint;
import io.weightrelay.api.control.model.RegisteredObject;
import io.weightrelay.api.control.model.RestoreRequest;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.TestStore;
import io.weightrelay.reshard.manifest.GenerationId;
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
    @Autowired io.weightrelay.control.store.ObjectStore objectStore;

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
        volatile boolean failRestores;

        /** When set, a save waits for it (after {@link #saveEntered}) before writing. */
        volatile java.util.concurrent.CountDownLatch saveGate;

        final java.util.concurrent.CountDownLatch saveEntered =
                new java.util.concurrent.CountDownLatch(1);
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
                        saveEntered.countDown();
                        java.util.concurrent.CountDownLatch gate = saveGate;
                        if (gate != null) {
                            try {
                                gate.await(30, java.util.concurrent.TimeUnit.SECONDS);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
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
                        try {
                            Files.write(
                                    Path.of(request.getDirectory()).resolve(file),
                                    new byte[(int) offset]);
                        } catch (IOException e) {
                            // As the publisher answers a full disk: 503 checkpoint-io-failed.
                            problem(exchange, 503, "cannot save into " + file + ": " + e);
                            return;
                        }
                        reply(exchange, result(held.size(), offset)._file(file).saved(saved));
                    });
            http.createContext(
                    "/api/v1/checkpoints/restore",
                    exchange -> {
                        OwnerCheckpointRequest request = received(exchange, restores);
                        if (failRestores) {
                            problem(exchange, 409, "saved object differs");
                            return;
                        }
                        long bytes = 0;
                        // As the publisher's contract: a file is one plain name.
                        if (request.getObjects().stream()
                                .anyMatch(o -> o.getFile().contains("/"))) {
                            problem(exchange, 400, "file must match ^[A-Za-z0-9._:-]{1,300}$");
                            return;
                        }
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
            send(exchange, 200, "application/json", answer);
        }

        private void problem(
                com.sun.net.httpserver.HttpExchange exchange, int status, String detail)
                throws IOException {
            send(
                    exchange,
                    status,
                    "application/problem+json",
                    Map.of(
                            "type",
                            "https://weightrelay.io/problems/checkpoint-corrupt",
                            "status",
                            status,
                            "detail",
                            detail));
        }

        /** {@code answer} as the JSON body of a {@code status} answer of {@code contentType}. */
        private void send(
                com.sun.net.httpserver.HttpExchange exchange,
                int status,
                String contentType,
                Object answer)
                throws IOException {
            byte[] body = json.writeValueAsString(answer).getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", contentType);
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

    private CheckpointReport save(GenerationId generation, Path dir) {
        return ok(saveCall(generation, dir), CheckpointReport.class);
    }

    private java.net.http.HttpResponse<String> saveCall(GenerationId generation, Path dir) {
        return call(
                "POST",
                "/api/v1/models/"
                        + generation.model()
                        + "/generations/"
                        + generation.generation()
                        + "/checkpoints",
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
            List<StoredFragment> fragments = heldHalfEach(model, g1, a, b);

            CheckpointReport report = save(new GenerationId(model, g1), dir);
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
                            Files.readAllBytes(checkpointJson(dir)), CheckpointManifest.class);
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
            // Files are named relative to the directory, inside the save's own directory.
            assertThat(
                            manifest.getObjects().stream()
                                    .map(o -> dir.resolve(o.getFile()))
                                    .map(p -> p.getParent().getParent().equals(dir))
                                    .distinct())
                    .containsExactly(true);
            assertThat(
                            manifest.getObjects().stream()
                                    .map(o -> Path.of(o.getFile()).getFileName().toString())
                                    .distinct())
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
            assertThat(activeGeneration(model)).isEqualTo(g1);
            assertThat(fragments(model, g1)).hasSize(fragments.size());
            // The next publish continues after the restored id.
            long g2 = publish(model, 2);
            assertThat(g2).isEqualTo(g1 + 1);
            // The older one is still stored: restoring it again is refused, nothing is called.
            int restoreCalls = a.restores.get() + b.restores.get() + idle.restores.get();
            java.net.http.HttpResponse<String> stored = restoreCall(model, dir);
            assertThat(stored.statusCode()).as(stored.body()).isEqualTo(409);
            assertThat(stored.body()).contains("/problems/generation-exists").contains("RETIRED");
            assertThat(a.restores.get() + b.restores.get() + idle.restores.get())
                    .isEqualTo(restoreCalls);
            // Once lost, it is restored again, and left retired while a newer one is active.
            reportedLostOnRestart(model, g1, a);
            Generation again = ok(restoreCall(model, dir), Generation.class);
            assertThat(again.getState()).isEqualTo(GenerationState.RETIRED);
            assertThat(activeGeneration(model)).isEqualTo(g2);
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
            heldHalfEach(model, g1, a, b);
            save(new GenerationId(model, g1), dir);
            assertThat(dir.resolve("COMPLETE")).exists();
            String first = Files.readString(dir.resolve("COMPLETE"));
            // A second save into the same directory with one owner failing: it writes no marker
            // and leaves the first checkpoint as it was (its marker, manifest and files).
            b.failSaves = true;
            java.net.http.HttpResponse<String> failed = saveCall(new GenerationId(model, g1), dir);
            assertThat(failed.statusCode()).as(failed.body()).isEqualTo(409);
            assertThat(failed.body())
                    .contains("/problems/checkpoint-failed")
                    .contains(b.store.segmentName())
                    .contains(b.held.get(0).getKey());
            assertThat(Files.readString(dir.resolve("COMPLETE"))).isEqualTo(first);
            assertThat(restorable(dir)).isTrue();
            try (var entries = Files.list(dir)) {
                assertThat(entries.toList()).as("the failed save's files are gone").hasSize(2);
            }
            assertThat(
                            read(generationPath(model, g1) + "/checkpoints", CheckpointStatus.class)
                                    .getSaved())
                    .as("the first checkpoint still stands")
                    .isTrue();
            // A directory without a marker is refused.
            Path empty = Files.createDirectories(dir.resolveSibling(dir.getFileName() + "-empty"));
            java.net.http.HttpResponse<String> restore = restoreCall(model, empty);
            assertThat(restore.statusCode()).isEqualTo(409);
            assertThat(restore.body()).contains("/problems/checkpoint-incomplete");
            // A manifest changed after the save is refused too.
            b.failSaves = false;
            save(new GenerationId(model, g1), dir);
            assertThat(Files.readString(dir.resolve("COMPLETE"))).isNotEqualTo(first);
            try (var entries = Files.list(dir)) {
                assertThat(entries.toList()).as("the replaced save is removed").hasSize(2);
            }
            Path manifest = checkpointJson(dir);
            Files.writeString(
                    manifest,
                    Files.readString(manifest).replace("\"trainerStep\":1", "\"trainerStep\":7"));
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
            heldHalfEach(model, g1, rogue, legacy);
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

    /** Whether every object of {@code fragments} is in the store. */
    private static boolean allStored(Owner owner, List<StoredFragment> fragments) {
        return fragments.stream().allMatch(f -> owner.store.exists(f.getKey()));
    }

    /** Deregisters every segment owner but {@code kept} (as an operator). */
    private void onlyOwners(Owner... kept) {
        List<String> names = new ArrayList<>();
        for (Owner o : kept) {
            names.add(o.store.segmentName());
        }
        for (io.weightrelay.api.control.model.SegmentOwner s :
                ok(
                        get("/api/v1/segments", OPERATOR),
                        io.weightrelay.api.control.model.SegmentOwner[].class)) {
            if (!names.contains(s.getSegment())) {
                call("DELETE", "/api/v1/segments/" + s.getSegment(), OPERATOR, null);
            }
        }
    }

    /** The active generation of {@code model}, as a loader reads it. */
    private Long activeGeneration(String model) {
        return read("/api/v1/models/" + model + "/generations/active", Generation.class)
                .getGeneration();
    }

    /** {@code owner} restarted and reports its objects of generation {@code g} lost (accepted). */
    private void reportedLostOnRestart(String model, long g, Owner owner) {
        String lost =
                "{\"segment\":\""
                        + owner.store.segmentName()
                        + "\",\"objects\":1,\"reason\":\"owner restarted\"}";
        assertThat(call("POST", generationPath(model, g) + "/lost", OWNER, lost).statusCode())
                .isEqualTo(200);
    }

    /**
     * The fragments of generation {@code g} of {@code model}, held half by {@code a} and half by
     * {@code b} (alternately, in the manifest's order).
     */
    private List<StoredFragment> heldHalfEach(String model, long g, Owner a, Owner b) {
        List<StoredFragment> fragments = fragments(model, g);
        for (int i = 0; i < fragments.size(); i++) {
            (i % 2 == 0 ? a : b).hold(fragments.get(i));
        }
        return fragments;
    }

    /**
     * Publishes g1 of {@code model}, held half by {@code a} and half by {@code b}, and saves it.
     */
    private List<StoredFragment> publishHeldAndSaved(
            String model, long g1, Owner a, Owner b, Path dir) {
        List<StoredFragment> fragments = heldHalfEach(model, g1, a, b);
        save(new GenerationId(model, g1), dir);
        return fragments;
    }

    @Test
    void aRestoreOfAGenerationThatIsStillStoredIsRefusedAndRemovesNothing(@TempDir Path dir)
            throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        try (Owner a = new Owner(0.1);
                Owner b = new Owner(0.1)) {
            List<StoredFragment> fragments = publishHeldAndSaved(model, g1, a, b, dir);
            // Both owners leave the registry (no owner alive with an admin URL): the generation's
            // objects are still stored and it is still active.
            a.heartbeats.shutdownNow();
            b.heartbeats.shutdownNow();
            for (Owner gone : List.of(a, b)) {
                assertThat(
                                call(
                                                "DELETE",
                                                "/api/v1/segments/" + gone.store.segmentName(),
                                                OPERATOR,
                                                null)
                                        .statusCode())
                        .isEqualTo(204);
            }

            java.net.http.HttpResponse<String> restore = restoreCall(model, dir);
            assertThat(restore.statusCode()).as(restore.body()).isEqualTo(409);
            assertThat(restore.body())
                    .contains("https://weightrelay.io/problems/generation-exists")
                    .contains("ACTIVE");
            assertThat(allStored(a, fragments))
                    .as("a refused restore removes no object of the live generation")
                    .isTrue();
            assertThat(read(generationPath(model, g1), Generation.class).getState())
                    .isEqualTo(GenerationState.ACTIVE);
            assertThat(a.restores.get() + b.restores.get()).isZero();
        }
    }

    @Test
    void aFailedRestoreOfALostGenerationRemovesOnlyWhatItStored(@TempDir Path dir)
            throws Exception {
        String model = newModel();
        try (Owner a = new Owner(0.1);
                Owner b = new Owner(0.1)) {
            // registered where publishHeldAndSaved stores them, so that b's owner may report the
            // loss of its own objects
            long g1 = open(model, 1).getGeneration().getGeneration();
            List<RegisteredObject> objects = new ArrayList<>();
            List<StoredFragment> all = fragments(model, g1);
            for (int i = 0; i < all.size(); i++) {
                String segment = (i % 2 == 0 ? a : b).store.segmentName();
                objects.add(
                        object(all.get(i).getKey(), all.get(i).getBytes())
                                .segments(List.of(segment)));
            }
            assertThat(register(model, g1, objects).statusCode()).isEqualTo(200);
            assertThat(commit(model, g1).statusCode()).isEqualTo(200);
            List<StoredFragment> fragments = publishHeldAndSaved(model, g1, a, b, dir);
            List<StoredFragment> keptByA = new ArrayList<>();
            for (int i = 0; i < fragments.size(); i += 2) {
                keptByA.add(fragments.get(i));
            }
            // b's owner restarted: its objects are gone and the generation is lost; a still
            // holds its half.
            List<String> goneWithB = new ArrayList<>();
            for (int i = 1; i < fragments.size(); i += 2) {
                goneWithB.add(fragments.get(i).getKey());
            }
            assertThat(objectStore.remove(goneWithB)).isEqualTo(goneWithB.size());
            reportedLostOnRestart(model, g1, b);
            // b refuses to restore (a 4xx for one file): the restore fails. Only a and b are
            // live owners (those of earlier tests are deregistered), so a stores some of b's.
            onlyOwners(a, b);
            b.failRestores = true;
            java.net.http.HttpResponse<String> restore = restoreCall(model, dir);
            assertThat(restore.statusCode()).as(restore.body()).isEqualTo(409);
            assertThat(restore.body()).contains("/problems/restore-failed");
            assertThat(allStored(a, keptByA))
                    .as("the replicas the restore never wrote are still stored")
                    .isTrue();
            assertThat(a.restored).as("a re-stored some of b's objects").isNotEmpty();
            assertThat(goneWithB).containsAll(a.restored);
            for (String key : goneWithB) {
                assertThat(a.store.exists(key)).as("re-stored then removed: " + key).isFalse();
            }
            assertThat(read(generationPath(model, g1), Generation.class).getState())
                    .isEqualTo(GenerationState.LOST);
        }
    }

    @Test
    void aTrainerTokenCannotReplaceOrRemoveAnOwnersRegistration() throws Exception {
        try (Owner a = new Owner(0.1)) {
            String segment = a.store.segmentName();
            java.net.http.HttpResponse<String> replaced =
                    putSegment(
                            segment, TRAINER, new SegmentRegistration("t9", "127.0.0.1:2", 1024L));
            assertThat(replaced.statusCode()).as(replaced.body()).isEqualTo(403);
            assertThat(replaced.body())
                    .contains("https://weightrelay.io/problems/forbidden")
                    .contains(segment)
                    .contains("registered by its owner");
            java.net.http.HttpResponse<String> removed =
                    call("DELETE", "/api/v1/segments/" + segment, TRAINER, null);
            assertThat(removed.statusCode()).as(removed.body()).isEqualTo(403);
            io.weightrelay.api.control.model.SegmentOwner kept =
                    read(
                            "/api/v1/segments/" + segment,
                            io.weightrelay.api.control.model.SegmentOwner.class);
            assertThat(kept.getAdminUrl()).isEqualTo(a.adminUrl());
            assertThat(kept.getNode()).isEqualTo("t0");
            // The owner itself may still re-register.
            ok(
                    putSegment(
                            segment,
                            OWNER,
                            new SegmentRegistration("t0", "127.0.0.1:1", 4L << 20)
                                    .adminUrl(a.adminUrl())),
                    io.weightrelay.api.control.model.SegmentOwner.class);
        }
    }

    @Test
    void aSaveHoldsALeaseSoCollectionWaitsForIt(@TempDir Path dir) throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        try (Owner a = new Owner(0.1);
                Owner b = new Owner(0.1)) {
            List<StoredFragment> fragments = heldHalfEach(model, g1, a, b);
            java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
            a.saveGate = gate;
            var saving =
                    java.util.concurrent.CompletableFuture.supplyAsync(
                            () -> saveCall(new GenerationId(model, g1), dir));
            try {
                assertThat(a.saveEntered.await(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                // g1 retires while its owners write it; a collection now must keep it.
                publish(model, 2);
                io.weightrelay.api.control.model.GcReport gc =
                        ok(
                                call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null),
                                io.weightrelay.api.control.model.GcReport.class);
                assertThat(gc.getCollected()).as("collected mid-save").doesNotContain(g1);
                assertThat(allStored(a, fragments)).isTrue();
            } finally {
                gate.countDown();
            }
            java.net.http.HttpResponse<String> saved =
                    saving.get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(saved.statusCode()).as(saved.body()).isEqualTo(200);
            // The save's lease ends with it: the next collection takes the retired generation.
            io.weightrelay.api.control.model.GcReport after =
                    ok(
                            call("POST", "/api/v1/models/" + model + "/gc", OPERATOR, null),
                            io.weightrelay.api.control.model.GcReport.class);
            assertThat(after.getCollected()).contains(g1);
        }
    }

    @Test
    void aSaveThatRunsOutOfDiskLeavesThePreviousCheckpointIntact() throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        try (Owner a = new Owner(0.1);
                Owner b = new Owner(0.1);
                TinyFilesystem disk = TinyFilesystem.mount(48 * 1024)) {
            Path dir = disk.path().resolve("ckpt");
            List<StoredFragment> fragments = publishHeldAndSaved(model, g1, a, b, dir);
            assertThat(restorable(dir)).isTrue();
            // The next generation is larger than the disk has room for: its save into the same
            // directory runs out of space.
            long g2 =
                    ok(
                                    requestOpen(
                                            model,
                                            2,
                                            manifestOf(model, tensor("embed.weight", 256, 128))),
                                    io.weightrelay.api.control.model.OpenedGeneration.class)
                            .getGeneration()
                            .getGeneration();
            registerAll(model, g2);
            assertThat(commit(model, g2).statusCode()).isEqualTo(200);
            fragments(model, g2).forEach(a::hold);
            java.net.http.HttpResponse<String> next = saveCall(new GenerationId(model, g2), dir);
            assertThat(next.statusCode()).as(next.body()).isEqualTo(409);
            assertThat(next.body())
                    .contains("/problems/checkpoint-failed")
                    .contains("No space left on device");
            // The first checkpoint is whole: restore it into a Redis that forgot everything.
            assertThat(restorable(dir)).as("the previous checkpoint survives").isTrue();
            forget(model);
            Generation restored = ok(restoreCall(model, dir), Generation.class);
            assertThat(restored.getGeneration()).isEqualTo(g1);
            assertThat(allStored(a, fragments)).isTrue();
            // Nothing of the failed save is left behind.
            try (var entries = Files.list(dir)) {
                assertThat(entries.map(p -> p.getFileName().toString()).toList())
                        .hasSize(2)
                        .contains("COMPLETE");
            }
        }
    }

    /** Whether {@code dir} holds a checkpoint whose marker vouches for its manifest. */
    private static boolean restorable(Path dir) throws IOException {
        return Files.exists(dir.resolve("COMPLETE")) && Files.exists(checkpointJson(dir));
    }

    /** The manifest the completion marker of {@code dir} names. */
    static Path checkpointJson(Path dir) throws IOException {
        String marker = Files.readString(dir.resolve("COMPLETE")).trim();
        int at = marker.indexOf(" save:");
        return at < 0
                ? dir.resolve("checkpoint.json")
                : dir.resolve(marker.substring(at + 6)).resolve("checkpoint.json");
    }

    @Test
    void checkpointDirectoriesStayInsideTheConfiguredRoot(@TempDir Path dir) throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        Path root = Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath();
        Path outside = root.getParent().resolve("outside-" + java.util.UUID.randomUUID());
        Path link = dir.resolve("link");
        Files.createDirectories(dir.resolve("real"));
        Files.createSymbolicLink(link, dir.resolve("real"));
        try (Owner a = new Owner(0.1)) {
            fragments(model, g1).forEach(a::hold);
            for (String refused :
                    List.of(
                            outside.toString(),
                            dir + "/../../" + outside.getFileName(),
                            dir + "/sub/../x",
                            link.toString(),
                            link + "/inner")) {
                java.net.http.HttpResponse<String> save =
                        call(
                                "POST",
                                "/api/v1/models/" + model + "/generations/" + g1 + "/checkpoints",
                                OPERATOR,
                                new CheckpointRequest(refused));
                assertThat(save.statusCode()).as(refused + ": " + save.body()).isEqualTo(400);
                assertThat(save.body())
                        .contains("https://weightrelay.io/problems/checkpoint-directory-refused")
                        .contains(refused);
                java.net.http.HttpResponse<String> restore =
                        call(
                                "POST",
                                "/api/v1/models/" + model + "/checkpoints/restore",
                                OPERATOR,
                                new RestoreRequest(refused));
                assertThat(restore.statusCode()).as(refused).isEqualTo(400);
                assertThat(restore.body()).contains("checkpoint-directory-refused");
            }
            assertThat(outside).doesNotExist();
            assertThat(dir.resolve("real")).isEmptyDirectory();
            assertThat(a.saves.get()).isZero();
        }
    }
}
