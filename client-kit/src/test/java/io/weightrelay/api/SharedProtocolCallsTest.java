package io.weightrelay.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.RegisterObjectsRequest;
import io.weightrelay.api.control.client.model.RegisteredObject;
import io.weightrelay.reshard.placement.FragmentTemplate;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;

/**
 * The calls loader-service and the lab's control-plane bench make through the kit, on a real
 * socket: a template goes up as octets under its digest with the client's token; a slice is asked
 * for gzip-compressed and handed back as it came, inflated only on demand. And the one body that
 * registers stored objects.
 */
class SharedProtocolCallsTest {

    private static final byte[] SLICE = "a slice, encoded".repeat(64).getBytes();

    /** What one request carried. */
    record Seen(String method, String path, String auth, String type, String accept, byte[] body) {}

    private final AtomicReference<Seen> seen = new AtomicReference<>();
    private HttpServer server;
    private ApiClient client;

    @BeforeEach
    void serve() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::answer);
        server.start();
        String url = "http://127.0.0.1:" + server.getAddress().getPort();
        client = RelayClients.of(Endpoint.of(url, "l0ader")).control();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    /** A PUT gets 204; a GET gets the slice, gzip-compressed when the request accepts it. */
    private void answer(HttpExchange exchange) throws IOException {
        var headers = exchange.getRequestHeaders();
        String accept = headers.getFirst(HttpHeaders.ACCEPT_ENCODING);
        seen.set(
                new Seen(
                        exchange.getRequestMethod(),
                        exchange.getRequestURI().getPath(),
                        headers.getFirst(HttpHeaders.AUTHORIZATION),
                        headers.getFirst(HttpHeaders.CONTENT_TYPE),
                        accept,
                        exchange.getRequestBody().readAllBytes()));
        if (exchange.getRequestMethod().equals("PUT")) {
            exchange.sendResponseHeaders(204, -1);
            exchange.close();
            return;
        }
        byte[] answer = SLICE;
        if (accept != null && accept.contains("gzip")) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
                gz.write(SLICE);
            }
            answer = out.toByteArray();
            exchange.getResponseHeaders().set(HttpHeaders.CONTENT_ENCODING, "gzip");
        }
        exchange.getResponseHeaders().set(HttpHeaders.CONTENT_TYPE, "application/octet-stream");
        exchange.sendResponseHeaders(200, answer.length);
        exchange.getResponseBody().write(answer);
        exchange.close();
    }

    @Test
    void aTemplateGoesUpAsOctetsUnderItsDigest() {
        FragmentTemplate t =
                FragmentTemplate.of(
                        List.of(
                                new FragmentTemplate.Entry(
                                        "w",
                                        new long[] {0},
                                        new long[] {8},
                                        "weights",
                                        0,
                                        new long[] {2})));

        PlacementTemplates.upload(client, t);

        Seen put = seen.get();
        assertThat(put.method()).isEqualTo("PUT");
        assertThat(put.path()).isEqualTo("/api/v1/placements/" + t.digest());
        assertThat(put.auth()).isEqualTo("Bearer l0ader");
        assertThat(put.type()).isEqualTo("application/octet-stream");
        assertThat(put.body()).isEqualTo(t.encoded());
    }

    @Test
    void aSliceComesAsItCrossedTheWireAndInflatesOnDemand() {
        EncodedBody body = PlanSlices.fetch(client, "p1", "i0");

        Seen get = seen.get();
        assertThat(get.path()).isEqualTo("/api/v1/plans/p1/slices/i0");
        assertThat(get.accept()).isEqualTo("gzip");
        assertThat(body.gzipped()).isTrue();
        assertThat(body.bytes()).isNotEqualTo(SLICE);
        assertThat(body.inflated()).isEqualTo(SLICE);
        assertThat(new EncodedBody(SLICE, false).inflated()).isSameAs(SLICE);
    }

    @Test
    void storedObjectsRegisterAsThePublishersOwnWithTheirSegment() {
        RegisterObjectsRequest request =
                StoredObject.registration(
                        "node-3", List.of(new StoredObject("m/1/w.0", 64, "crc32c:0000", "seg-3")));

        assertThat(request.getPublisher()).isEqualTo("node-3");
        assertThat(request.getObjects())
                .containsExactly(
                        new RegisteredObject()
                                .key("m/1/w.0")
                                .size(64L)
                                .checksum("crc32c:0000")
                                .segments(List.of("seg-3")));
    }
}
