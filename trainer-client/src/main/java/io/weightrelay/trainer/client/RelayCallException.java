package io.weightrelay.trainer.client;

import io.weightrelay.api.RemoteProblem;
import org.springframework.web.client.RestClientResponseException;

/**
 * A REST call of the protocol failed: the service's problem type and detail, or why no answer came.
 * {@link #problemType()} is the stable slug (for example {@code store-failed}).
 */
public class RelayCallException extends RuntimeException {

    private static final long serialVersionUID = 1L;

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
            RemoteProblem problem = RemoteProblem.of(r);
            String type = problem.type() == null ? "unknown" : problem.type();
            return new RelayCallException(
                    service
                            + ": "
                            + what
                            + " failed ("
                            + problem.status()
                            + " "
                            + type
                            + "): "
                            + problem.detailOrBody(),
                    problem.status(),
                    type,
                    e);
        }
        return new RelayCallException(
                service + ": " + what + " got no answer: " + e.getMessage(), 0, "no-answer", e);
    }
}
