package io.weightrelay.service.dataplane;

import io.weightrelay.dataplane.MetadataException;
import java.util.Optional;

/**
 * Tells a data plane that could not reach its Redis (the store directory and the segment
 * descriptors live there) from its other failures, and says so in one sentence naming the Redis and
 * the property that chose it: the same words in Spring Boot's start-up report ({@link
 * DataplaneRedisFailureAnalyzer}) and in the 503 problem a request that needed the data plane gets.
 */
public final class DataplaneRedis {

    /** How the data plane's message begins when a connection to its Redis fails. */
    private static final String CONNECT = "cannot connect to Redis at ";

    /** How the sentence begins; the lab's health wait looks for it in a service's log. */
    public static final String UNREACHABLE = "cannot reach Redis at ";

    /** The property that names the data plane's Redis. */
    public static final String PROPERTY = "relay.dataplane.redis-uri";

    private DataplaneRedis() {}

    /** The Redis {@code failure} could not reach, in its cause chain; empty for other failures. */
    public static Optional<Unreachable> unreachable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof MetadataException m
                    && m.getMessage() != null
                    && m.getMessage().startsWith(CONNECT)) {
                String rest = m.getMessage().substring(CONNECT.length());
                String suffix = " [" + m.error() + "]";
                if (rest.endsWith(suffix)) {
                    rest = rest.substring(0, rest.length() - suffix.length());
                }
                int why = rest.indexOf(": ");
                return Optional.of(
                        new Unreachable(
                                m,
                                why < 0 ? rest : rest.substring(0, why),
                                why < 0 ? "" : rest.substring(why + 2)));
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return Optional.empty();
    }

    /**
     * The data plane's Redis did not answer.
     *
     * @param failure the data plane's exception
     * @param address the Redis URI, password masked
     * @param reason why, as the client said it ({@code Connection refused}), or empty
     */
    public record Unreachable(MetadataException failure, String address, String reason) {

        /** {@code cannot reach Redis at <uri> (relay.dataplane.redis-uri): <reason>}. */
        public String sentence() {
            return UNREACHABLE
                    + address
                    + " ("
                    + PROPERTY
                    + ")"
                    + (reason.isEmpty() ? "" : ": " + reason);
        }
    }
}
