package io.weightrelay.trainer.client;

import org.springframework.web.client.RestClientResponseException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A REST call of the protocol failed: the service's problem type and detail, or why no answer came.
 * {@link #problemType()} is the stable slug (for example {@code store-failed}).
 */
public class RelayCallException extends RuntimeException {

    private static final long serialVersionUID = 1L;
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String TYPE_BASE = "https://weightrelay.io/problems/";

    private final int status;
    private final String problemType;

    public RelayCallException(String message, int status, String problemType, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.problemType = problemType;
    }

    /** HTTP status, 0 when no answer came. */
    public int status() {
        return status;
    }

    /** The problem type's slug, or {@code no-answer}. */
    public String problemType() {
        return problemType;
    }

    /** Wraps a failed call to {@code service}, keeping its problem type and detail. */
    static RelayCallException of(String service, String what, RuntimeException e) {
        if (e instanceof RestClientResponseException r) {
            String type = "unknown";
            String detail = r.getResponseBodyAsString();
            try {
                JsonNode body = JSON.readTree(detail);
                if (body.has("type")) {
                    type = body.get("type").asString().replace(TYPE_BASE, "");
                }
                if (body.has("detail")) {
                    detail = body.get("detail").asString();
                }
            } catch (RuntimeException notJson) {
                // keep the raw body
            }
            return new RelayCallException(
                    service
                            + ": "
                            + what
                            + " failed ("
                            + r.getStatusCode().value()
                            + " "
                            + type
                            + "): "
                            + detail,
                    r.getStatusCode().value(),
                    type,
                    e);
        }
        return new RelayCallException(
                service + ": " + what + " got no answer: " + e.getMessage(), 0, "no-answer", e);
    }
}
