package io.weightrelay.dataplane;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * The one place test engines get their configuration: local Redis, the test's key prefix and the
 * test deployment's secret (without one an engine talks to nobody over tcp), and the one way a test
 * runs a single transfer.
 */
final class TestEngines {
    /** The secret every test engine of the "deployment" shares. */
    static final byte[] SECRET =
            "native-dataplane test deployment".getBytes(StandardCharsets.UTF_8);

    /** How long one test transfer may take before it counts as hung. */
    private static final Duration TRANSFER_WAIT = Duration.ofSeconds(60);

    private TestEngines() {}

    /** One transfer by {@code dataplane}'s engine, waited for (it throws the task's failure). */
    static void transfer(Dataplane dataplane, TransferRequest request) {
        dataplane.engine().transfer(List.of(request), TRANSFER_WAIT);
    }

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
