package io.weightrelay.service.client;

import java.util.function.Predicate;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClientResponseException;

/**
 * What may pass on a second try: no answer (a refused, reset or timed-out connection) or a 503 or
 * 429 answer. A retry's {@code retry-exception-predicate} in the services' configuration.
 */
public final class TransientFailure implements Predicate<Throwable> {

    @Override
    public boolean test(Throwable e) {
        return e instanceof ResourceAccessException
                || (e instanceof RestClientResponseException r
                        && (r.getStatusCode().value() == 503 || r.getStatusCode().value() == 429));
    }
}
