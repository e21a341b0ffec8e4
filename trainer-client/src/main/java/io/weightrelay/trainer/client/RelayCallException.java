package io.weightrelay.trainer.client;

import io.weightrelay.api.RemoteCallException;
import io.weightrelay.api.RemoteProblem;
import org.springframework.web.client.RestClientResponseException;

/**
 * A REST call of the protocol failed: the service's problem type and detail, or why no answer came.
 * {@link #problemType()} is the stable slug (for example {@code store-failed}).
 */
public class RelayCallException extends RemoteCallException {

    private static final long serialVersionUID = 1L;

    private RelayCallException(String message, RemoteProblem answer, Throwable cause) {
        super(message, answer, cause);
    }

    /**
     * The problem type's slug; {@code unknown} for an answer that was not a problem, {@code
     * no-answer} when none came.
     */
    @Override
    public String problemType() {
        return slug(problem());
    }

    private static String slug(RemoteProblem answer) {
        if (answer == null) {
            return "no-answer";
        }
        return answer.type() == null ? "unknown" : answer.type();
    }

    /** Wraps a failed call to {@code service}, keeping its problem type and detail. */
    static RelayCallException of(String service, String what, RuntimeException e) {
        if (e instanceof RestClientResponseException r) {
            RemoteProblem problem = RemoteProblem.of(r);
            return new RelayCallException(
                    service
                            + ": "
                            + what
                            + " failed ("
                            + problem.status()
                            + " "
                            + slug(problem)
                            + "): "
                            + problem.detailOrBody(),
                    problem,
                    e);
        }
        return new RelayCallException(
                service + ": " + what + " got no answer: " + e.getMessage(), null, e);
    }
}
