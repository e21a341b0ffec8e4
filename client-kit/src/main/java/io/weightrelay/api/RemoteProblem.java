package io.weightrelay.api;

import java.time.Duration;
import java.util.Optional;
import org.springframework.http.HttpHeaders;
import org.springframework.web.client.RestClientResponseException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Another service's error answer, decoded once for every client: the HTTP status and the RFC 9457
 * members of its {@code application/problem+json} body (the contracts' {@code Problem}). {@code
 * type} is the slug under {@link #TYPE_BASE} ({@code generation-not-found}); a body that is not a
 * problem leaves {@code type}, {@code title} and {@code detail} null and keeps its text in {@link
 * #body()}.
 */
public record RemoteProblem(int status, String type, String title, String detail, String body) {

    /** Every problem type of the contracts lives under this base. */
    public static final String TYPE_BASE = "https://weightrelay.io/problems/";

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** The problem in the answer {@code e} carries. */
    public static RemoteProblem of(RestClientResponseException e) {
        String body = e.getResponseBodyAsString();
        JsonNode problem = parse(body);
        return new RemoteProblem(
                e.getStatusCode().value(),
                text(problem, "type") == null ? null : text(problem, "type").replace(TYPE_BASE, ""),
                text(problem, "title"),
                text(problem, "detail"),
                body);
    }

    /** A member the problem adds (the {@code missing} digests, a generation's {@code state}). */
    public JsonNode member(String name) {
        JsonNode problem = parse(body);
        return problem == null ? null : problem.get(name);
    }

    /**
     * How long the answer asks its caller to wait before trying again: {@code Retry-After-Ms} (a
     * publisher's full staging), else {@code Retry-After} in seconds; empty without either, or with
     * an HTTP date.
     */
    public static Optional<Duration> retryAfter(RestClientResponseException e) {
        HttpHeaders headers = e.getResponseHeaders();
        String ms = headers == null ? null : headers.getFirst("Retry-After-Ms");
        String seconds = headers == null ? null : headers.getFirst("Retry-After");
        try {
            if (ms != null) {
                return Optional.of(Duration.ofMillis(Long.parseLong(ms.trim())));
            }
            if (seconds != null) {
                return Optional.of(Duration.ofSeconds(Long.parseLong(seconds.trim())));
            }
        } catch (NumberFormatException httpDate) {
            // not a number: the caller's default
        }
        return Optional.empty();
    }

    /** Whether the problem's type is {@code slug}. */
    public boolean is(String slug) {
        return slug.equals(type);
    }

    /** The detail, or the body's text when the answer was not a problem. */
    public String detailOrBody() {
        return detail != null ? detail : body;
    }

    private static JsonNode parse(String body) {
        try {
            JsonNode node = JSON.readTree(body);
            return node != null && node.isObject() ? node : null;
        } catch (RuntimeException notJson) {
            return null;
        }
    }

    private static String text(JsonNode problem, String name) {
        return problem == null || !problem.has(name) ? null : problem.get(name).asString();
    }
}
