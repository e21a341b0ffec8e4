package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.weightrelay.testkit.redis.RedisTestSupport;
import org.junit.jupiter.api.Test;

/**
 * The incarnation mark against real Redis: made once and shared by every instance behind the same
 * Redis; its loss (Redis restarted empty, played by deleting every key of the prefix) is noticed
 * and counted once, and a new mark is made.
 */
class IncarnationTest extends RedisSliceTestSupport {

    private static final String PREFIX = RedisTestSupport.uniqueKeyPrefix("incarnation");

    @Override
    protected String prefix() {
        return PREFIX;
    }

    @Test
    void aLostMarkIsNoticedCountedOnceAndMadeAgain() {
        RedisKeys keys = new RedisKeys(new RedisKeyProperties(PREFIX));
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        Incarnation one = new Incarnation(redis, keys, meters);
        Incarnation other = new Incarnation(redis, keys, new SimpleMeterRegistry());

        String first = one.check();
        assertThat(first).isNotBlank().isEqualTo(redis.opsForValue().get(PREFIX + "incarnation"));
        assertThat(other.check()).as("instances behind one Redis agree").isEqualTo(first);
        assertThat(one.check()).isEqualTo(first);
        assertThat(meters.counter("relay.redis.data-lost").count()).isZero();

        RedisTestSupport.deleteKeys(PREFIX);

        String second = one.check();
        assertThat(second).isNotBlank().isNotEqualTo(first);
        assertThat(meters.counter("relay.redis.data-lost").count()).isEqualTo(1.0);
        assertThat(one.check()).isEqualTo(second);
        assertThat(other.check()).isEqualTo(second);
        assertThat(meters.counter("relay.redis.data-lost").count()).isEqualTo(1.0);
        assertThat(one.current()).isEqualTo(second);
    }
}
