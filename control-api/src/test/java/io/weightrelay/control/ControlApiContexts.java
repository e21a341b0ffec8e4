package io.weightrelay.control;

import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Whole control-api instances started in the test JVM against the shared test Redis, for tests that
 * run several (replicas with skewed clocks) or stop and start one (an outage): a random port, every
 * key under {@code prefix}, the role tokens {@link ControlApiClientSupport} sends (each role's, the
 * owner's too), no scheduled GC, no eager plan settling and no checksum verification, plus the
 * test's own {@code settings} (TTLs, skews).
 */
final class ControlApiContexts {

    private ControlApiContexts() {}

    static ConfigurableApplicationContext start(String prefix, Map<String, Object> settings) {
        RedisTestSupport.Endpoint redis = RedisTestSupport.endpoint();
        Map<String, Object> p = new HashMap<>();
        p.put("server.port", "0");
        p.put("spring.data.redis.host", redis.host());
        p.put("spring.data.redis.port", redis.port());
        p.put("relay.redis.key-prefix", prefix);
        p.put("relay.dataplane.key-prefix", prefix + "dp:");
        p.put("relay.dataplane.secret", TestDataplane.SECRET);
        p.put("relay.dataplane.redis-uri", redis.uri());
        p.put("relay.checkpoints.root", System.getProperty("java.io.tmpdir"));
        p.put("relay.generations.scheduled-gc", "false");
        p.put("relay.plans.eager-settle", "0s");
        p.put("relay.updates.verify-checksums", "false");
        p.put("relay.security.tokens.trainer[0]", ControlApiClientSupport.TRAINER);
        p.put("relay.security.tokens.loader[0]", ControlApiClientSupport.LOADER);
        p.put("relay.security.tokens.operator[0]", ControlApiClientSupport.OPERATOR);
        p.put("relay.security.tokens.owner[0]", ControlApiClientSupport.OWNER);
        p.putAll(settings);
        // as command-line arguments: above application.yaml, as a deployment's settings are
        String[] args =
                p.entrySet().stream()
                        .map(e -> "--" + e.getKey() + "=" + e.getValue())
                        .toArray(String[]::new);
        return new SpringApplicationBuilder(ControlApiApplication.class).run(args);
    }
}
