package io.weightrelay.control.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.control.redis.RedisKeys;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.data.redis.core.StringRedisTemplate;

/** The start-up warm-up runs the whole plan computation and leaves nothing behind. */
class PlanWarmUpTest extends ControlApiTestSupport {

    @Autowired PlanService plans;
    @Autowired StringRedisTemplate redis;
    @Autowired RedisKeys keys;
    @Autowired MeterRegistry meters;

    @Test
    void theWarmUpComputesAPlanPerModeAndStoresNothing() {
        long computed = meters.timer("relay.plans.compute").count();
        double misses = meters.counter("relay.plans.cache", "result", "miss").count();

        plans.warmUp();

        for (String id : new String[] {"warm-up-COMPAT", "warm-up-DIRECT"}) {
            assertThat(redis.hasKey(keys.planSummary(id))).isFalse();
            assertThat(redis.hasKey(keys.planEncoded(id))).isFalse();
            assertThat(redis.keys(keys.planSlice(id, "*"))).isEmpty();
        }
        assertThat(meters.timer("relay.plans.compute").count()).isEqualTo(computed);
        assertThat(meters.counter("relay.plans.cache", "result", "miss").count()).isEqualTo(misses);
    }
}
