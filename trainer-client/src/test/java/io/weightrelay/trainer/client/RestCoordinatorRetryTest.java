package io.weightrelay.trainer.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import io.weightrelay.reshard.manifest.GenerationId;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link RestCoordinator} against a real HTTP server that answers from a script: a 503 with {@code
 * Retry-After} is waited out and the call repeated; a commit or abort whose retry finds the
 * generation already ACTIVE or ABORTED won on the earlier attempt; the same conflict on a first
 * attempt is an error; other failures are not retried.
 */
class RestCoordinatorRetryTest {

    private static final GenerationId M7 = new GenerationId("m", 7);

    private record Answer(int status, String body) {}

    private final Deque<Answer> script = new ArrayDeque<>();
    private final List<String> calls = new CopyOnWriteArrayList<>();
    private HttpServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    private RestCoordinator coordinator(Answer... answers) throws IOException {
        script.addAll(List.of(answers));
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext(
                "/",
                exchange -> {
                    exchange.getRequestBody().readAllBytes();
                    calls.add(exchange.getRequestMethod() + " " + exchange.getRequestURI());
                    Answer a;
                    synchronized (script) {
                        a =
                                script.isEmpty()
                                        ? new Answer(500, problem("unscripted", null))
                                        : script.poll();
                    }
                    byte[] body = a.body().getBytes(StandardCharsets.UTF_8);
                    exchange.getResponseHeaders()
                            .set(
                                    "Content-Type",
                                    a.status() >= 400
                                            ? "application/problem+json"
                                            : "application/json");
                    if (a.status() == 503) {
                        exchange.getResponseHeaders().set("Retry-After", "1");
                    }
                    exchange.sendResponseHeaders(a.status(), body.length);
                    exchange.getResponseBody().write(body);
                    exchange.close();
                });
        server.start();
        return new RestCoordinator(
                "http://127.0.0.1:" + server.getAddress().getPort(),
                "token",
                Duration.ofSeconds(5),
                1 << 20);
    }

    private static String problem(String type, String state) {
        return "{\"type\":\"https://weightrelay.io/problems/"
                + type
                + "\",\"status\":409,\"detail\":\""
                + type
                + "\""
                + (state == null ? "" : ",\"state\":\"" + state + "\"")
                + "}";
    }

    private static Answer unavailable() {
        return new Answer(
                503,
                "{\"type\":\"https://weightrelay.io/problems/redis-unavailable\",\"status\":503,"
                        + "\"detail\":\"Redis is unavailable (circuit open); retry shortly\"}");
    }

    private static final Answer COMMITTED =
            new Answer(200, "{\"model\":\"m\",\"generation\":7,\"state\":\"ACTIVE\"}");

    @Test
    void aCommitAnswered503IsRepeatedAfterRetryAfterUntilItSucceeds() throws IOException {
        RestCoordinator c = coordinator(unavailable(), unavailable(), COMMITTED);
        long start = System.nanoTime();
        c.commit(M7);
        assertThat(calls)
                .hasSize(3)
                .allMatch(s -> s.equals("POST /api/v1/models/m/generations/7/commit"));
        assertThat(Duration.ofNanos(System.nanoTime() - start))
                .as("waited Retry-After (1 s) twice")
                .isGreaterThanOrEqualTo(Duration.ofMillis(1900));
    }

    @Test
    void aRetriedCommitThatFindsItsGenerationActiveWonOnTheEarlierAttempt() throws IOException {
        RestCoordinator c =
                coordinator(unavailable(), new Answer(409, problem("commit-conflict", "ACTIVE")));
        c.commit(M7);
        assertThat(calls).hasSize(2);
    }

    @Test
    void theSameConflictOnAFirstAttemptIsAnError() throws IOException {
        RestCoordinator c = coordinator(new Answer(409, problem("commit-conflict", "ACTIVE")));
        assertThatThrownBy(() -> c.commit(M7))
                .isInstanceOfSatisfying(
                        RelayCallException.class,
                        e -> {
                            assertThat(e.status()).isEqualTo(409);
                            assertThat(e.problemType()).isEqualTo("commit-conflict");
                        });
        assertThat(calls).hasSize(1);
    }

    @Test
    void aRetriedCommitRefusedForAnotherReasonIsAnError() throws IOException {
        RestCoordinator c =
                coordinator(unavailable(), new Answer(409, problem("commit-conflict", "RETIRED")));
        assertThatThrownBy(() -> c.commit(M7))
                .isInstanceOfSatisfying(
                        RelayCallException.class,
                        e -> assertThat(e.problemType()).isEqualTo("commit-conflict"));
        assertThat(calls).hasSize(2);
    }

    @Test
    void aRetriedAbortThatFindsItsGenerationAbortedIsDone() throws IOException {
        RestCoordinator c =
                coordinator(
                        unavailable(), new Answer(409, problem("generation-not-open", "ABORTED")));
        c.abort(M7, "trainer step failed");
        assertThat(calls).hasSize(2).allMatch(s -> s.endsWith("/generations/7/abort"));
    }

    @Test
    void aServerErrorOtherThan503IsNotRetried() throws IOException {
        RestCoordinator c = coordinator(new Answer(500, problem("internal", null)), COMMITTED);
        assertThatThrownBy(() -> c.commit(M7))
                .isInstanceOfSatisfying(
                        RelayCallException.class, e -> assertThat(e.status()).isEqualTo(500));
        assertThat(calls).hasSize(1);
    }
}
