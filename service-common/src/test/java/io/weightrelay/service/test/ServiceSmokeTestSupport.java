package io.weightrelay.service.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * What every service's smoke test checks over a real socket: health, the OpenAPI document, and that
 * a bad request is answered with {@code application/problem+json} and a stable type.
 */
public abstract class ServiceSmokeTestSupport {

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** The port the service under test listens on (loopback). */
    protected abstract int port();

    protected HttpResponse<String> get(String path) {
        return send(HttpRequest.newBuilder(uri(path)).GET());
    }

    protected HttpResponse<String> send(HttpRequest.Builder request) {
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

    protected void assertServesOpenApi(String expectedPath) {
        HttpResponse<String> docs = get("/v3/api-docs");
        assertThat(docs.statusCode()).isEqualTo(200);
        assertThat(docs.body()).contains(expectedPath);
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
}
