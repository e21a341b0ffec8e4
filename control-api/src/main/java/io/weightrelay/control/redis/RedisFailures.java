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
 * from a slow answer (a command timeout: answered with 503, neither retried nor counted, since a
 * large value on a busy machine times out while Redis is healthy; {@link RedisProbe} asks Redis
 * itself whether it is there) and from a real error (a bug or a script error, answered with 500 and
 * never retried).
 */
public final class RedisFailures {

    private RedisFailures() {}

    /**
     * What Redis answered when it refused this service's credentials or ACL ({@code WRONGPASS},
     * {@code NOAUTH}, {@code NOPERM}), or null. Redis's answers never carry the password.
     */
    public static String authFailure(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String message = t.getMessage();
            if (message != null
                    && (message.contains("WRONGPASS")
                            || message.contains("NOAUTH")
                            || message.contains("NOPERM"))) {
                int at =
                        Math.max(
                                message.indexOf("WRONGPASS"),
                                Math.max(message.indexOf("NOAUTH"), message.indexOf("NOPERM")));
                return message.substring(at);
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    /** Redis cannot be reached or did not answer in time: the caller gets a 503. */
    public static boolean isUnavailable(Throwable failure) {
        return isConnectionLost(failure) || isTimeout(failure);
    }

    /** The connection is gone or refused: retried, and counted by the circuit breaker. */
    public static boolean isConnectionLost(Throwable failure) {
        if (isTimeout(failure)) {
            return false;
        }
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof RedisConnectionFailureException
                    || t instanceof DataAccessResourceFailureException
                    || t instanceof RedisConnectionException
                    || t instanceof IOException) {
                return true;
            }
            String message = t.getMessage();
            if (message != null) {
                String m = message.toLowerCase(Locale.ROOT);
                if (m.contains("not connected")
                        || m.contains("connection closed")
                        // a command in flight when Redis died (SIGKILL): Lettuce drains it so
                        || m.contains("connection disconnected")
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

    /** A command waited longer than the command timeout for its answer. */
    public static boolean isTimeout(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof QueryTimeoutException || t instanceof RedisCommandTimeoutException) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    /**
     * Why a call to Redis failed, for a log line: what Redis answered when it refused the
     * credentials, else the innermost cause's message ({@code Connection refused}, a timeout).
     */
    public static String describe(Throwable failure) {
        String auth = authFailure(failure);
        if (auth != null) {
            return auth;
        }
        Throwable t = failure;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    }
}
