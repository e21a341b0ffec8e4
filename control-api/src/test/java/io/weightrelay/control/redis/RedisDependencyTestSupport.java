package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.Generation;
import io.weightrelay.control.ControlApiClientSupport;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneConfig;
import io.weightrelay.dataplane.RegisteredBuffer;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.service.dataplane.DataplaneSettings;
import java.nio.ByteBuffer;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * What the tests of Redis as a secured dependency (authentication, TLS) check through the Redis
 * they start: control-api's own state works, and an engine stores and finds an object.
 */
abstract class RedisDependencyTestSupport extends ControlApiClientSupport {

    /** The data plane settings control-api derived from the Redis connection under test. */
    @Autowired protected DataplaneSettings dataplane;

    /**
     * Puts control-api's keys under {@code prefix} and its data plane's under {@code <prefix>dp:}:
     * where the Redis under test lets them be.
     */
    protected static void keyPrefix(DynamicPropertyRegistry registry, String prefix) {
        registry.add("relay.redis.key-prefix", () -> prefix);
        registry.add("relay.dataplane.key-prefix", () -> prefix + "dp:");
    }

    /** Publishes a generation of a new model, reads it back as active; health answers 200. */
    protected void publishesAndServesTheActiveGeneration() {
        String model = newModel();
        long g = publish(model, 1);
        Generation active =
                ok(
                        get("/api/v1/models/" + model + "/generations/active", OPERATOR),
                        Generation.class);
        assertThat(active.getGeneration()).isEqualTo(g);
        assertThat(get("/actuator/health", null).statusCode()).isEqualTo(200);
    }

    /** Opens an engine of {@code config}, stores one object in its own segment and finds it. */
    protected static void storesAndFindsAnObject(DataplaneConfig config, String name) {
        try (Dataplane dp = Dataplane.open(config)) {
            Segment segment = dp.createSegment(name + "-seg", 1 << 16);
            RegisteredBuffer source = dp.registerBuffer(ByteBuffer.allocateDirect(4096));
            dp.store()
                    .putFrom(
                            name + "/1/x@0",
                            source,
                            0,
                            4096,
                            ReplicateConfig.preferLocal(segment.name()));
            assertThat(dp.store().exists(name + "/1/x@0")).isTrue();
        }
    }
}
