package io.weightrelay.service.test;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.nio.charset.StandardCharsets;

/**
 * The data-plane secret of the services' tests: every engine a test starts (in-process, a child
 * service, a test-side reader) holds it, since an engine without a secret makes no tcp connection
 * at all.
 */
public final class TestDataplane {

    /** {@code relay.dataplane.secret} of every test service. */
    public static final String SECRET = "test-dataplane-secret-0123456789";

    private TestDataplane() {}

    /** The secret as {@code DataplaneConfig.secret} takes it (what the services derive from it). */
    public static byte[] secret() {
        return SECRET.getBytes(StandardCharsets.UTF_8);
    }

    /** An engine of {@code node} on the tests' Redis, its keys under {@code keyPrefix}. */
    public static Dataplane open(String node, String keyPrefix) {
        return Dataplane.open(
                DataplaneConfig.builder(node)
                        .redisUri(RedisTestSupport.endpoint().uri())
                        .keyPrefix(keyPrefix)
                        .secret(secret())
                        .build());
    }
}
