package io.weightrelay.control;

import io.weightrelay.control.plan.PlanService;
import io.weightrelay.reshard.checksum.Crc32c;
import io.weightrelay.reshard.checksum.ObjectVerification.ExpectedRange;
import io.weightrelay.reshard.checksum.RangeChecksums;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The whole service on a loopback port against the test Redis. Every test class extending this
 * shares one context (and one key prefix per run); tests keep apart by model name.
 */
@ControlApiTestProperties
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "relay.security.tokens.owner[0]=" + ControlApiClientSupport.OWNER,
            "relay.security.tokens.metrics[0]=" + ControlApiClientSupport.METRICS,
            "relay.security.bound[0].role=owner",
            "relay.security.bound[0].identity=" + ControlApiClientSupport.BOUND_SEGMENT,
            "relay.security.bound[0].token=" + ControlApiClientSupport.OWNER_BOUND,
            "relay.security.bound[1].role=loader",
            "relay.security.bound[1].identity=" + ControlApiClientSupport.BOUND_INSTANCE,
            "relay.security.bound[1].token=" + ControlApiClientSupport.LOADER_BOUND,
            "relay.checkpoints.owner-token=" + ControlApiClientSupport.OWNER_CALL,
            "relay.generations.max-objects=1000",
            "relay.registry.segment-ttl=2s",
            "relay.registry.loader-ttl=60s",
            "relay.registry.heartbeat-ages-interval=300ms",
            "relay.limits.max-request-bytes=1048576"
        })
public abstract class ControlApiTestSupport extends ControlApiClientSupport {

    /** One prefix per test run: the store's directory lives under it too. */
    public static final String PREFIX = RedisTestSupport.uniqueKeyPrefix("control-api");

    public static final String STORE_PREFIX = PREFIX + "dp:";

    @Autowired protected PlanService plans;

    /**
     * What each reader of plan {@code planId} reports with APPLIED when it read every planned range
     * right: per instance, its ranges, whose CRC32Cs combine per object to {@code registered} (the
     * checksum every object of these tests is registered with).
     */
    protected Map<String, List<RangeChecksums.Entry>> plannedReads(String planId, int registered) {
        Map<String, List<RangeChecksums.Entry>> out = new TreeMap<>();
        plans.expectedRanges(planId)
                .forEach(
                        (object, ranges) -> {
                            List<ExpectedRange> sorted = new ArrayList<>(ranges);
                            sorted.sort(Comparator.comparingLong(ExpectedRange::offset));
                            int prefix = 0;
                            for (int i = 0; i < sorted.size(); i++) {
                                ExpectedRange r = sorted.get(i);
                                int crc =
                                        i < sorted.size() - 1
                                                ? 0x5eed1234 + i
                                                : registered
                                                        ^ Crc32c.combine(prefix, 0, r.length());
                                prefix = i == 0 ? crc : Crc32c.combine(prefix, crc, r.length());
                                out.computeIfAbsent(r.reader(), k -> new ArrayList<>())
                                        .add(
                                                new RangeChecksums.Entry(
                                                        object, r.offset(), r.length(), crc));
                            }
                        });
        return out;
    }

    static {
        // The context is cached for the whole run and closed only at exit; delete after that.
        RedisTestSupport.deleteKeysAtShutdown(PREFIX);
    }

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        RedisTestSupport.register(registry);
        registry.add("relay.redis.key-prefix", () -> PREFIX);
        registry.add("relay.dataplane.key-prefix", () -> STORE_PREFIX);
        registry.add("relay.dataplane.secret", () -> TestDataplane.SECRET);
        registry.add("relay.dataplane.redis-uri", () -> RedisTestSupport.endpoint().uri());
        // Checkpoints go under the tests' temporary directory (the module's target/test-tmp).
        registry.add("relay.checkpoints.root", () -> System.getProperty("java.io.tmpdir"));
    }
}
