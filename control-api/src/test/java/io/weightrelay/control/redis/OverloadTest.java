package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.PlanRequest;
import io.weightrelay.api.control.model.PlanSummary;
import io.weightrelay.control.ControlApiTestProperties;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;

/**
 * Overloads control-api and watches it refuse cleanly and serve normally within 10 s after:
 * oversized bodies (413 naming the limit), more body bytes in flight than the heap budget (503
 * {@code overloaded} naming the limit, with {@code Retry-After}), a burst of concurrent plan
 * requests for many groups (each answered 200 or a 503 with {@code Retry-After}, never a 500 or a
 * hang), and Redis command timeouts while Redis itself answers (its private Redis pauses writers
 * with {@code CLIENT PAUSE WRITE}: the timed-out calls get 503 but the circuit stays closed).
 */
@ControlApiTestProperties
@Import(PrivateRedisConfiguration.class)
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "relay.registry.loader-ttl=60s",
            "relay.redis.key-prefix=wr:overload-test:",
            "relay.limits.max-request-bytes=1048576",
            "relay.limits.max-in-flight-request-bytes=3145728"
        })
class OverloadTest extends PrivateRedisTestSupport {

    private static final int SLOW_BODY = 1_000_000;

    @Autowired RedisGuard guard;

    @Test
    void refusesWhatWouldExceedMemoryAndServesNormallyWithin10sAfter() throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        String gens = "/api/v1/models/" + model + "/generations";

        // One body above the per-request limit: refused before it is read, naming the limit.
        HttpResponse<String> oversized =
                call("POST", gens, TRAINER, "{\"pad\":\"" + "x".repeat(2 << 20) + "\"}");
        assertProblem(oversized, 413, "payload-too-large");
        assertThat(oversized.body()).contains("relay.limits.max-request-bytes");

        // A gzip body is accepted, and held to the limit as it inflates.
        assertThat(gzipCall(gens, openBody(model, 5)).statusCode()).isEqualTo(201);
        HttpResponse<String> bomb = gzipCall(gens, "{\"pad\":\"" + " ".repeat(3 << 20) + "\"}");
        assertProblem(bomb, 413, "payload-too-large");
        assertThat(bomb.body()).contains("relay.limits.max-request-bytes");

        // Three bodies trickling in hold 3 MB of the 3 MiB budget: the next large one is refused
        // at once, while calls without a body are served as usual.
        List<Socket> slow = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                slow.add(slowBody(gens, SLOW_BODY));
            }
            String padded = "{" + " ".repeat(SLOW_BODY - 2) + "}";
            HttpResponse<String> refused = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            long oneMoreAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
            while (System.nanoTime() < deadline) {
                refused = call("POST", gens, TRAINER, padded);
                if (refused.statusCode() == 503) {
                    break;
                }
                if (slow.size() == 3 && System.nanoTime() > oneMoreAt) {
                    // A body is charged only once Tomcat hands its connection to a worker; one
                    // CI run saw a trickling connection not handed over within 10 s (cause not
                    // found). One more keeps the budget held whichever three are being read.
                    slow.add(slowBody(gens, SLOW_BODY));
                }
                Thread.sleep(50);
            }
            assertProblem(refused, 503, "overloaded");
            assertThat(refused.body()).contains("relay.limits.max-in-flight-request-bytes");
            assertThat(refused.headers().firstValue("Retry-After")).isPresent();
            assertThat(get(gens + "/active", LOADER).statusCode()).isEqualTo(200);

            // A burst of plan requests, many groups at once, while the budget is taken.
            List<String> groups = new ArrayList<>();
            for (int g = 0; g < 8; g++) {
                String group = "grp" + g;
                groups.add(group);
                for (int l = 0; l < 2; l++) {
                    String instance = group + "-l" + l + "-" + model;
                    registerLoader(instance, compatLoader(model, group, instance, 2));
                }
            }
            ExecutorService burst = Executors.newFixedThreadPool(32);
            try {
                List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
                for (int i = 0; i < 64; i++) {
                    String group = groups.get(i % groups.size());
                    answers.add(
                            CompletableFuture.supplyAsync(
                                    () ->
                                            call(
                                                    "POST",
                                                    "/api/v1/plans",
                                                    LOADER,
                                                    new PlanRequest(model, g1, group)),
                                    burst));
                }
                for (CompletableFuture<HttpResponse<String>> a : answers) {
                    HttpResponse<String> r = a.get(60, TimeUnit.SECONDS);
                    assertThat(r.statusCode()).as(r.body()).isIn(200, 503);
                    if (r.statusCode() == 503) {
                        assertThat(r.body()).containsAnyOf("plan-busy", "overloaded");
                        assertThat(r.headers().firstValue("Retry-After")).isPresent();
                    }
                }
            } finally {
                burst.shutdownNow();
            }
        } finally {
            for (Socket s : slow) {
                s.close();
            }
        }

        // Within 10 s of the load ending everything is served normally again.
        long released = System.nanoTime();
        String padded = "{" + " ".repeat(SLOW_BODY - 2) + "}";
        HttpResponse<String> large;
        do {
            large = call("POST", gens, TRAINER, padded);
        } while (large.statusCode() == 503
                && TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - released) < 10);
        assertProblem(large, 400, "invalid-request");
        for (int g = 0; g < 8; g++) {
            PlanSummary plan = resolvePlan(model, g1, "grp" + g);
            assertThat(plan.getValid()).isTrue();
        }
        long g2 = publish(model, 2);
        assertThat(ok(get(gens + "/active", LOADER), Generation.class).getGeneration())
                .isEqualTo(g2);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released))
                .as("serving normally within 10 s after the overload")
                .isLessThan(10_000);
        assertThat(guard.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    }

    @Test
    void commandTimeoutsWhileRedisAnswersLeaveTheCircuitClosed() throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        String active = "/api/v1/models/" + model + "/generations/active";
        Set<CircuitBreaker.State> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();
        AtomicBoolean watching = new AtomicBoolean(true);
        CompletableFuture<Void> watcher =
                CompletableFuture.runAsync(
                        () -> {
                            while (watching.get()) {
                                seen.add(guard.state());
                                PrivateRedis.sleep(20);
                            }
                        });
        // Writers wait 3 s, longer than the 2 s command timeout; Redis still answers PING.
        redisCli("CLIENT", "PAUSE", "3000", "WRITE");
        ExecutorService callers = Executors.newFixedThreadPool(8);
        List<CompletableFuture<HttpResponse<String>>> during = new ArrayList<>();
        try {
            for (int i = 0; i < 8; i++) {
                long step = 10 + i;
                during.add(
                        CompletableFuture.supplyAsync(
                                () ->
                                        call(
                                                "POST",
                                                "/api/v1/models/" + model + "/generations",
                                                TRAINER,
                                                openBody(model, step)),
                                callers));
            }
            int timedOut = 0;
            for (CompletableFuture<HttpResponse<String>> f : during) {
                HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
                timedOut += r.statusCode() == 503 ? 1 : 0;
                assertThat(r.statusCode()).as(r.body()).isIn(200, 201, 503);
                if (r.statusCode() == 503) {
                    assertProblem(r, 503, "redis-unavailable");
                }
            }
            assertThat(timedOut)
                    .as("enough calls timed out to have opened the old breaker (5, 50%)")
                    .isGreaterThanOrEqualTo(5);
        } finally {
            callers.shutdownNow();
        }
        HttpResponse<String> after;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        do {
            after = get(active, LOADER);
        } while (after.statusCode() != 200 && System.nanoTime() < deadline);
        assertThat(ok(after, Generation.class).getGeneration()).isEqualTo(g1);
        watching.set(false);
        watcher.get(5, TimeUnit.SECONDS);
        assertThat(seen)
                .as("timeouts while Redis answers never open the circuit")
                .containsOnly(CircuitBreaker.State.CLOSED);
    }

    private String openBody(String model, long step) {
        return json.writeValueAsString(
                new io.weightrelay.api.control.model.OpenGenerationRequest(
                        step, manifest(model), trainers("t0", "t1")));
    }

    private HttpResponse<String> gzipCall(String path, String body) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream gzip = new java.util.zip.GZIPOutputStream(out)) {
            gzip.write(body.getBytes(StandardCharsets.UTF_8));
        }
        return send(
                java.net.http.HttpRequest.newBuilder(uri(path))
                        .header("Authorization", "Bearer " + TRAINER)
                        .header("Content-Type", "application/json")
                        .header("Content-Encoding", "gzip")
                        .POST(
                                java.net.http.HttpRequest.BodyPublishers.ofByteArray(
                                        out.toByteArray())));
    }

    /** A request whose headers promise {@code length} body bytes, of which one is sent. */
    private Socket slowBody(String path, int length) throws IOException {
        Socket socket = new Socket("127.0.0.1", port());
        OutputStream out = socket.getOutputStream();
        out.write(
                ("POST "
                                + path
                                + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                                + TRAINER
                                + "\r\nContent-Type: application/json\r\nContent-Length: "
                                + length
                                + "\r\n\r\n{")
                        .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return socket;
    }

    private void redisCli(String... command) throws Exception {
        List<String> argv =
                new ArrayList<>(List.of("/usr/bin/redis-cli", "-p", String.valueOf(redis.port())));
        argv.addAll(List.of(command));
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(out).as(String.join(" ", command)).isEqualTo("OK");
    }
}
