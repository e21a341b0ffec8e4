package io.weightrelay.dataplane;

import java.nio.charset.StandardCharsets;

/**
 * The one place test engines get their configuration: local Redis, the test's key prefix and the
 * test deployment's secret (without one an engine talks to nobody over tcp).
 */
final class TestEngines {
    /** The secret every test engine of the "deployment" shares. */
    static final byte[] SECRET =
            "native-dataplane test deployment".getBytes(StandardCharsets.UTF_8);

    private TestEngines() {}

    /** A builder for an engine of the test deployment. */
    static DataplaneConfig.Builder config(String nodeLabel, String redisUri, String keyPrefix) {
        return DataplaneConfig.builder(nodeLabel)
                .redisUri(redisUri)
                .keyPrefix(keyPrefix)
                .secret(SECRET);
    }

    static DataplaneConfig.Builder config(String nodeLabel, String keyPrefix) {
        return config(nodeLabel, RedisSupport.URI, keyPrefix);
    }
}
