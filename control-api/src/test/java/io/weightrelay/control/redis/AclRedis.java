package io.weightrelay.control.redis;

import java.util.List;
import java.util.UUID;

/**
 * One private redis-server for the Redis-authentication tests, on a free loopback port: the default
 * user needs {@code requirepass}, and the ACL user {@link #USER} may touch only keys under {@code
 * wr:} and the channels control-api publishes and subscribes to. Killed (and its directory deleted)
 * when the JVM exits.
 */
final class AclRedis {

    static final String USER = "wr-h9";
    static final String PASSWORD = "acl-" + UUID.randomUUID();
    static final String DEFAULT_PASSWORD = "default-" + UUID.randomUUID();
    static final String PREFIX = "wr:redis-auth-h9:";

    private static PrivateRedis redis;

    private AclRedis() {}

    static synchronized PrivateRedis started() {
        if (redis == null) {
            PrivateRedis r =
                    new PrivateRedis(
                            List.of(
                                    "--requirepass",
                                    DEFAULT_PASSWORD,
                                    "--user",
                                    USER,
                                    "on",
                                    ">" + PASSWORD,
                                    "~wr:*",
                                    "resetchannels",
                                    "&wr:*",
                                    // PSUBSCRIBE patterns must be allowed literally.
                                    "&" + PREFIX + "events:*",
                                    "+@all",
                                    "-@dangerous",
                                    // Spring Boot's Redis health check reads INFO.
                                    "+info"));
            r.start();
            r.closeAtExit();
            redis = r;
        }
        return redis;
    }
}
