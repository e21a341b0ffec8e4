package io.weightrelay.service.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * What every service's smoke test checks over a real socket: health, the OpenAPI document, and that
 * a bad request is answered with {@code application/problem+json} and a stable type.
 */
public abstract class ServiceSmokeTestSupport {

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @LocalServerPort private int port;

    /** The port the service under test listens on (loopback), as its test context started it. */
    protected int port() {
        return port;
    }

    protected HttpResponse<String> get(String path) {
        return send(HttpRequest.newBuilder(uri(path)).GET());
    }

    protected HttpResponse<String> send(HttpRequest.Builder request) {
        return exchange(request);
    }

    /** A request with the JSON {@code body}, sent with {@code method} to {@code path}. */
    protected HttpRequest.Builder jsonRequest(String method, String path, String body) {
        return HttpRequest.newBuilder(uri(path))
                .header("Content-Type", "application/json")
                .method(method, HttpRequest.BodyPublishers.ofString(body));
    }

    /** Sends {@code request} as it is, whatever a subclass's {@link #send} adds. */
    private static HttpResponse<String> exchange(HttpRequest.Builder request) {
        try {
            return HTTP.send(
                    request.timeout(Duration.ofSeconds(30)).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException ex) {
            throw new IllegalStateException("request failed: " + ex, ex);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ex);
        }
    }

    protected URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port() + path);
    }

    protected void assertHealthy() {
        HttpResponse<String> health = get("/actuator/health");
        assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"");
    }

    /**
     * Swagger UI shows the service's hand-written contract {@code document} (titled {@code title},
     * holding {@code expectedPath}, with the bearer scheme behind the Authorize button and this
     * service as its server), and the shared components it refers to resolve; the UI's
     * configuration names no other document.
     */
    protected void assertServesTheContract(String document, String title, String expectedPath) {
        HttpResponse<String> config = get("/v3/api-docs/swagger-config");
        assertThat(config.statusCode()).as(config.body()).isEqualTo(200);
        assertThat(config.body())
                .contains("\"url\":\"/openapi/" + document + "\"")
                .doesNotContain("\"urls\"");
        HttpResponse<String> contract = get("/openapi/" + document);
        assertThat(contract.statusCode()).as(contract.body()).isEqualTo(200);
        assertThat(contract.headers().firstValue("Content-Type"))
                .hasValueSatisfying(ct -> assertThat(ct).startsWith("application/yaml"));
        assertThat(contract.body())
                .contains("title: " + title)
                .contains(expectedPath + ":")
                .contains("securitySchemes:\n    bearer:\n      type: http\n      scheme: bearer")
                .contains("servers:\n  - url: /\n")
                .contains("./common.yaml#/components/");
        HttpResponse<String> common = get("/openapi/common.yaml");
        assertThat(common.statusCode()).isEqualTo(200);
        assertThat(common.body()).contains("title: weight-relay shared components");
        assertProblem(get("/openapi/nothing.yaml"), 404, "not-found");
        HttpResponse<String> ui = get("/swagger-ui/index.html");
        assertThat(ui.statusCode()).isEqualTo(200);
    }

    protected static void assertProblem(
            HttpResponse<String> response, int status, String typeSlug) {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
        assertThat(response.headers().firstValue("Content-Type"))
                .hasValueSatisfying(ct -> assertThat(ct).startsWith("application/problem+json"));
        assertThat(response.body())
                .contains("\"type\":\"https://weightrelay.io/problems/" + typeSlug + "\"");
    }

    /**
     * A Prometheus server's token scrapes {@code /actuator/prometheus} (JVM and HTTP meters at
     * least) and is refused everywhere else: the other actuator endpoints and {@code apiPath}.
     */
    protected void assertScrapeTokenReadsOnlyMetrics(String metricsToken, String apiPath) {
        HttpResponse<String> scrape = getAs("/actuator/prometheus", metricsToken);
        assertThat(scrape.statusCode()).as(scrape.body()).isEqualTo(200);
        assertThat(scrape.body()).contains("jvm_memory_used_bytes");
        assertProblem(getAs("/actuator/metrics", metricsToken), 403, "forbidden");
        assertProblem(getAs(apiPath, metricsToken), 403, "forbidden");
    }

    /** A GET with exactly this token (none when {@code null}), whatever {@link #send} adds. */
    protected HttpResponse<String> getAs(String path, String token) {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri(path)).GET();
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        return exchange(request);
    }

    /**
     * What the servlet container refuses before Spring sees the request is problem+json too: an
     * encoded slash, an encoded backslash, a NUL, a bad percent-encoding, and headers over the size
     * limit.
     */
    protected void assertContainerRejectionsAreProblems() {
        for (String path :
                new String[] {"/api/v1/a%2Fb", "/api/v1/a%5Cb", "/api/v1/a%00b", "/api/v1/%zz"}) {
            assertRawProblem(
                    "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                    400,
                    "invalid-request");
        }
        String big = "a".repeat(64 * 1024);
        String response =
                raw(
                        "GET /actuator/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
                                + big
                                + "\r\nConnection: close\r\n\r\n");
        assertThat(statusOf(response)).as(response).isIn(400, 431);
        assertRawIsProblem(response);
    }

    /**
     * What Spring or the container refuses past the request line is problem+json too (each found by
     * the contract fuzz, lab's {@code ContractFuzzTest}): a {@code TRACE}, which Tomcat refuses
     * before any servlet and Spring Boot's error page answered as plain JSON; and a request that
     * declares a multipart body without a boundary, a 500 before. {@code token} may call {@code
     * path}.
     */
    protected void assertTraceAndBadMultipartAreProblems(String token, String path) {
        String auth = "Authorization: Bearer " + token + "\r\n";
        String trace =
                raw(
                        "TRACE "
                                + path
                                + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                + auth
                                + "Connection: close\r\n\r\n");
        assertThat(statusOf(trace)).as(trace).isEqualTo(405);
        assertRawIsProblem(trace);
        assertThat(trace)
                .contains("\"type\":\"https://weightrelay.io/problems/method-not-allowed\"")
                .contains("\"instance\":\"" + path + "\"");
        assertRawProblem(
                "GET "
                        + path
                        + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        + auth
                        + "Content-Type: multipart/form-data\r\nConnection: close\r\n\r\n",
                400,
                "invalid-request");
    }

    /**
     * A query string Tomcat cannot parse (an empty-named {@code &=} chunk), sent to {@code
     * pathWithQuery}, an operation that reads parameters, is 400 problem+json, not a 500 (found by
     * the contract fuzz).
     */
    protected void assertUnparsableQueryIsProblem(String token, String pathWithQuery) {
        assertRawProblem(
                "GET "
                        + pathWithQuery
                        + "&= HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                        + token
                        + "\r\nConnection: close\r\n\r\n",
                400,
                "invalid-request");
    }

    /**
     * {@code body}, sent with {@code method} to {@code path}, is refused as 400 {@code
     * invalid-request} problem+json before a controller acts on it: what the contract fuzz found as
     * 500s, such as a {@code null} item of an array ({@code NullPointerException}s) or a directory
     * with a NUL in it ({@code InvalidPathException}).
     */
    protected void assertBodyIsRefusedAsInvalid(
            String token, String method, String path, String body) {
        HttpResponse<String> refused =
                exchange(
                        jsonRequest(method, path, body).header("Authorization", "Bearer " + token));
        assertProblem(refused, 400, "invalid-request");
    }

    /**
     * A chunked body (its size unknown in advance) that runs past {@code limit} bytes is refused
     * with 413 as it is read, naming the limit's property.
     */
    protected void assertChunkedBodyOverTheLimitIsRefused(
            String method, String path, String token, int limit) {
        String json = "{\"x\":\"" + "a".repeat(limit + 1024) + "\"}";
        StringBuilder chunked = new StringBuilder();
        for (int at = 0; at < json.length(); at += 8192) {
            String chunk = json.substring(at, Math.min(json.length(), at + 8192));
            chunked.append(Integer.toHexString(chunk.length())).append("\r\n");
            chunked.append(chunk).append("\r\n");
        }
        chunked.append("0\r\n\r\n");
        String response =
                raw(
                        method
                                + " "
                                + path
                                + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                                + token
                                + "\r\nContent-Type: application/json\r\n"
                                + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                + chunked);
        assertThat(statusOf(response)).as(response).isEqualTo(413);
        assertRawIsProblem(response);
        assertThat(response)
                .contains("payload-too-large")
                .contains("relay.limits.max-request-bytes");
    }

    private void assertRawProblem(String request, int status, String typeSlug) {
        String response = raw(request);
        assertThat(statusOf(response)).as(request + " -> " + response).isEqualTo(status);
        assertRawIsProblem(response);
        assertThat(response)
                .contains("\"type\":\"https://weightrelay.io/problems/" + typeSlug + "\"");
    }

    private static void assertRawIsProblem(String response) {
        assertThat(response.toLowerCase(java.util.Locale.ROOT))
                .as(response)
                .contains("\r\ncontent-type: application/problem+json")
                .doesNotContain("<html");
    }

    private static int statusOf(String response) {
        String[] line = response.split("\r\n", 2)[0].split(" ");
        return line.length < 2 ? -1 : Integer.parseInt(line[1]);
    }

    /** Sends {@code request} as raw bytes over a new connection; the whole response as text. */
    protected String raw(String request) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port()), 5000);
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            try {
                out.write(request.getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
            } catch (IOException refusedMidRequest) {
                // The server may answer and close before it read everything: read what it said.
            }
            InputStream in = socket.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        } catch (IOException ex) {
            throw new IllegalStateException("raw request failed: " + ex, ex);
        }
    }
}
