package io.weightrelay.loader.control;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.github.resilience4j.retry.RetryRegistry;
import io.github.resilience4j.springboot.retry.autoconfigure.RetryAutoConfiguration;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.control.ControlPlane.Barrier;
import io.weightrelay.loader.control.ControlPlane.BarrierState;
import io.weightrelay.loader.control.ControlPlane.Report;
import io.weightrelay.loader.control.ControlPlane.Reported;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.ConfigDataApplicationContextInitializer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.mock.env.MockEnvironment;

/**
 * The loader's only control-api is killed while a loader waits at a barrier and comes back on the
 * same port seconds later: the loader's call (with the retry of its own {@code application.yaml})
 * waits for it and returns what the restarted instance answers, instead of failing its update. A
 * killed instance closes the connection of the call it was serving without an answer (the client
 * sees no status line, not a refused connection), then refuses connections until it is back.
 */
class ControlApiRestartTest {

    private static final SessionKey SESSION = new SessionKey(new GenerationId("m", 2), "lab");

    private static final String OPEN =
            "{\"barrier\":\"prepared\",\"open\":true,\"failed\":false,\"arrived\":2,"
                    + "\"expected\":2,\"waiting\":[]}";

    @Test
    void aBarrierWaitOutlivesARestartOfTheOnlyControlApi() throws Exception {
        outlivesARestart(
                control -> control.awaitBarrier(SESSION, Barrier.PREPARED, Duration.ofSeconds(30)));
    }

    /** A report and barrier wait in one call (a POST, which the HTTP client never sends twice). */
    @Test
    void anArrivalOutlivesARestartOfTheOnlyControlApi() throws Exception {
        outlivesARestart(
                control ->
                        control.arrive(
                                SESSION,
                                Report.of("i0001", 7, Reported.PREPARED),
                                Barrier.PREPARED,
                                Duration.ofSeconds(30)));
    }

    private static void outlivesARestart(Function<RestControlPlane, BarrierState> call)
            throws Exception {
        new ApplicationContextRunner()
                .withInitializer(new ConfigDataApplicationContextInitializer())
                .withConfiguration(AutoConfigurations.of(RetryAutoConfiguration.class))
                .run(context -> outlivesARestart(context.getBean(RetryRegistry.class), call));
    }

    private static void outlivesARestart(
            RetryRegistry retries, Function<RestControlPlane, BarrierState> call) throws Exception {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        ServerSocket killed = new ServerSocket(0, 50, loopback);
        int port = killed.getLocalPort();
        // The instance being killed: it reads the loader's call, then its process is gone.
        CompletableFuture<Void> crash =
                CompletableFuture.runAsync(
                        () -> {
                            try (killed;
                                    Socket served = killed.accept()) {
                                readHeaders(served.getInputStream());
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        });
        RestControlPlane control = plane("http://127.0.0.1:" + port, retries);
        CompletableFuture<BarrierState> waiting =
                CompletableFuture.supplyAsync(() -> call.apply(control));
        crash.get(10, TimeUnit.SECONDS);
        // Down for a few seconds (connections refused), then the same port answers again.
        Thread.sleep(3000);
        HttpServer restarted = HttpServer.create(new InetSocketAddress(loopback, port), 50);
        restarted.createContext(
                "/",
                exchange -> {
                    byte[] body = OPEN.getBytes(StandardCharsets.UTF_8);
                    exchange.getRequestBody().readAllBytes();
                    exchange.getResponseHeaders().set("Content-Type", "application/json");
                    exchange.sendResponseHeaders(200, body.length);
                    exchange.getResponseBody().write(body);
                    exchange.close();
                });
        restarted.start();
        try {
            BarrierState state = waiting.get(60, TimeUnit.SECONDS);
            assertThat(state.open()).isTrue();
            assertThat(state.failed()).isFalse();
        } finally {
            restarted.stop(0);
        }
    }

    private static RestControlPlane plane(String url, RetryRegistry retries) {
        LoaderProperties properties =
                new LoaderProperties(
                        url,
                        "",
                        "",
                        2,
                        Duration.ofSeconds(30),
                        Duration.ofMinutes(2),
                        Duration.ofSeconds(5),
                        Duration.ofMillis(500),
                        1,
                        -1,
                        "",
                        "",
                        true,
                        false,
                        false,
                        Duration.ofSeconds(5));
        return new RestControlPlane(
                properties,
                new ControlClientProperties(Duration.ofSeconds(2), Duration.ofSeconds(40)),
                retries,
                null,
                null,
                new MockEnvironment());
    }

    /** Reads a request's header block (up to the blank line). */
    private static void readHeaders(InputStream in) throws java.io.IOException {
        int matched = 0;
        byte[] end = {'\r', '\n', '\r', '\n'};
        int b;
        while (matched < end.length && (b = in.read()) >= 0) {
            matched = b == end[matched] ? matched + 1 : (b == end[0] ? 1 : 0);
        }
    }
}
