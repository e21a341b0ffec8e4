package io.weightrelay.control.redis;

import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import java.io.IOException;
import java.util.Locale;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.QueryTimeoutException;
import org.springframework.data.redis.RedisConnectionFailureException;

/**
 * Tells an unreachable Redis (worth a retry, counted by the circuit breaker, answered with 503)
 * from a real error (a bug or a script error, answered with 500 and never retried).
 */
public final class RedisFailures {

    private RedisFailures() {}

    public static boolean isUnavailable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof RedisConnectionFailureException
                    || t instanceof DataAccessResourceFailureException
                    || t instanceof QueryTimeoutException
                    || t instanceof RedisConnectionException
                    || t instanceof RedisCommandTimeoutException
                    || t instanceof IOException) {
                return true;
            }
            String message = t.getMessage();
            if (message != null) {
                String m = message.toLowerCase(Locale.ROOT);
                if (m.contains("not connected")
                        || m.contains("connection closed")
                        || m.contains("connection reset")
                        || m.contains("commands are rejected")
                        || m.contains("loading redis is loading")) {
                    return true;
                }
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }
}
