package io.weightrelay.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.model.AbortRequest;
import io.weightrelay.api.loader.client.InstanceApi;
import io.weightrelay.api.publisher.client.StagingApi;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.http.client.ClientHttpRequestInterceptor;

/**
 * {@link RelayClients} on a real socket: each of the three generated clients reaches the endpoint's
 * base URL with its token, compression is what was asked for and nothing more, an interceptor of
 * the caller's sees the request as it goes on the wire, and several base URLs fail over.
 */
class RelayClientsTest {

    /** What one request carried, as the server read it. */
    record Seen(
            String method,
            String path,
            String authorization,
            String acceptEncoding,
            String contentEncoding,
            byte[] body) {}

    private static final String GENERATION = "{\"model\":\"m\",\"generation\":7}";

    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private HttpServer server;
    private String url;

    @BeforeEach
    void serve() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::answer);
        server.start();
        url = "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    /** Answers every request with a generation, gzip-compressed when the request accepts it. */
    private void answer(HttpExchange exchange) throws IOException {
        var headers = exchange.getRequestHeaders();
        seen.add(
                new Seen(
                        exchange.getRequestMethod(),
                        exchange.getRequestURI().getPath(),
                        headers.getFirst(HttpHeaders.AUTHORIZATION),
                        headers.getFirst(HttpHeaders.ACCEPT_ENCODING),
                        headers.getFirst(HttpHeaders.CONTENT_ENCODING),
                        exchange.getRequestBody().readAllBytes()));
        byte[] answer = GENERATION.getBytes(StandardCharsets.UTF_8);
        String accept = headers.getFirst(HttpHeaders.ACCEPT_ENCODING);
        if (accept != null && accept.contains("gzip")) {
            answer = gzip(answer);
            exchange.getResponseHeaders().set(HttpHeaders.CONTENT_ENCODING, "gzip");
        }
        exchange.getResponseHeaders().set(HttpHeaders.CONTENT_TYPE, "application/json");
        exchange.sendResponseHeaders(200, answer.length);
        exchange.getResponseBody().write(answer);
        exchange.close();
    }

    @Test
    void theControlClientCallsTheBaseUrlWithTheTokenAndNoCompressionUnasked() {
        GenerationsApi api =
                new GenerationsApi(RelayClients.of(Endpoint.of(url + "/", "t0k")).control());

        assertThat(api.getGeneration("m", 7L).getGeneration()).isEqualTo(7L);

        Seen request = seen.get(0);
        assertThat(request.path()).isEqualTo("/api/v1/models/m/generations/7");
        assertThat(request.authorization()).isEqualTo("Bearer t0k");
        assertThat(request.acceptEncoding()).isNull();
    }

    @Test
    void thePublisherAndLoaderClientsAreBuiltTheSameWay() {
        Endpoint endpoint = new Endpoint(url, "p", Duration.ofSeconds(5), Duration.ofSeconds(5));

        new StagingApi(RelayClients.of(endpoint).publisher()).getStaging();
        new InstanceApi(RelayClients.of(endpoint.withToken("l")).loader()).getInstance();

        assertThat(seen)
                .extracting(Seen::path, Seen::authorization)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("/api/v1/staging", "Bearer p"),
                        org.assertj.core.groups.Tuple.tuple("/api/v1/instance", "Bearer l"));
    }

    @Test
    void noTokenSendsNoAuthorization() {
        new GenerationsApi(RelayClients.of(Endpoint.of(url, "")).control()).getGeneration("m", 7L);

        assertThat(seen.get(0).authorization()).isNull();
    }

    @Test
    void gzipResponsesAsksForThemAndInflatesWhatComes() {
        GenerationsApi api =
                new GenerationsApi(
                        RelayClients.of(Endpoint.of(url, "t")).gzipResponses().control());

        assertThat(api.getGeneration("m", 7L).getModel()).isEqualTo("m");
        assertThat(seen.get(0).acceptEncoding()).isEqualTo("gzip");
    }

    @Test
    void gzipRequestBodiesSendsALargeBodyCompressedAndTheCallersInterceptorSeesItSo()
            throws IOException {
        AtomicInteger wireBytes = new AtomicInteger();
        AtomicReference<String> wireEncoding = new AtomicReference<>();
        ClientHttpRequestInterceptor wire =
                (request, body, execution) -> {
                    wireBytes.set(body.length);
                    wireEncoding.set(request.getHeaders().getFirst(HttpHeaders.CONTENT_ENCODING));
                    return execution.execute(request, body);
                };
        String reason = "x".repeat(2 * GzipRequestBodies.THRESHOLD);
        GenerationsApi api =
                new GenerationsApi(
                        RelayClients.of(Endpoint.of(url, "t"))
                                .gzipRequestBodies()
                                .with(wire)
                                .control());

        api.abortGeneration("m", 7L, new AbortRequest().reason(reason));

        Seen request = seen.get(0);
        assertThat(request.contentEncoding()).isEqualTo("gzip");
        assertThat(new String(gunzip(request.body()), StandardCharsets.UTF_8)).contains(reason);
        assertThat(wireEncoding.get()).isEqualTo("gzip");
        assertThat(wireBytes.get()).isEqualTo(request.body().length).isLessThan(reason.length());
    }

    @Test
    void aSmallBodyOrAClientWithoutGzipSendsTheBodyAsItIs() {
        String reason = "x".repeat(2 * GzipRequestBodies.THRESHOLD);
        new GenerationsApi(RelayClients.of(Endpoint.of(url, "t")).control())
                .abortGeneration("m", 7L, new AbortRequest().reason(reason));
        new GenerationsApi(RelayClients.of(Endpoint.of(url, "t")).gzipRequestBodies().control())
                .abortGeneration("m", 7L, new AbortRequest().reason("short"));

        assertThat(seen).extracting(Seen::contentEncoding).containsOnlyNulls();
        assertThat(new String(seen.get(0).body(), StandardCharsets.UTF_8)).contains(reason);
    }

    @Test
    void severalBaseUrlsFailOverToTheOneThatAnswers() throws IOException {
        String dead;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            dead = "http://127.0.0.1:" + s.getLocalPort();
        }
        GenerationsApi api =
                new GenerationsApi(RelayClients.of(Endpoint.of(dead + "," + url, "t")).control());

        assertThat(api.getGeneration("m", 7L).getGeneration()).isEqualTo(7L);
        assertThat(seen).hasSize(1);
    }

    private static byte[] gzip(byte[] bytes) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gzip = new GZIPOutputStream(out)) {
            gzip.write(bytes);
        }
        return out.toByteArray();
    }

    private static byte[] gunzip(byte[] bytes) throws IOException {
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(bytes))) {
            return in.readAllBytes();
        }
    }
}
