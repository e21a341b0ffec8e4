package io.weightrelay.service.client;

import java.io.IOException;
import java.util.function.Predicate;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClientException;
import org.springframework.web.client.RestClientResponseException;

/**
 * What may pass on a second try: no answer (a refused, reset or timed-out connection, or one that
 * broke before the answer was read whole: a server killed mid-call) or a 503 or 429 answer. A
 * retry's {@code retry-exception-predicate} in the services' configuration.
 */
public final class TransientFailure implements Predicate<Throwable> {

    @Override
    public boolean test(Throwable e) {
        return e instanceof ResourceAccessException
                || (e instanceof RestClientResponseException r
                        && (r.getStatusCode().value() == 503 || r.getStatusCode().value() == 429))
                || (e instanceof RestClientException
                        && !(e instanceof RestClientResponseException)
                        && brokenConnection(e));
    }

    /**
     * Whether {@code e} was caused by an I/O failure: the client could not read the answer ("Error
     * while extracting response ... Unexpected end of file from server"), not that the answer was
     * one it could not decode.
     */
    private static boolean brokenConnection(Throwable e) {
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
            if (c instanceof IOException) {
                return true;
            }
        }
        return false;
    }
}
