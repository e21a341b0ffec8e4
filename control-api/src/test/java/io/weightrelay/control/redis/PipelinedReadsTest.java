package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.Loader;
import io.weightrelay.control.ControlApiTestSupport;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * A pipeline needs a dedicated Redis connection; control-api pools them, so the pipelined reads
 * every prepare and barrier makes (a group's loaders, a session with its participants) reuse
 * connections instead of opening and closing one each, as they did before the pool.
 */
class PipelinedReadsTest extends ControlApiTestSupport {

    private static final int READS = 40;

    @Autowired StringRedisTemplate redis;

    @Value("${spring.data.redis.lettuce.pool.max-active}")
    int poolMaxActive;

    @Value("${server.tomcat.threads.max}")
    int requestThreads;

    private long connectionsReceived() {
        Properties stats =
                redis.execute(
                        (RedisCallback<Properties>)
                                connection -> connection.serverCommands().info("stats"));
        return Long.parseLong(stats.getProperty("total_connections_received").trim());
    }

    @Test
    void pipelinedReadsOfTheLoadersReuseThePoolsConnections() {
        String model = newModel();
        registerLoader(model + "-a", compatLoader(model, "grp", "node-a", 1));
        registerLoader(model + "-b", compatLoader(model, "grp", "node-b", 1));
        // The first read may open the pool's connection.
        assertThat(read("/api/v1/loaders?model=" + model, Loader[].class)).hasSize(2);

        long before = connectionsReceived();
        for (int i = 0; i < READS; i++) {
            assertThat(read("/api/v1/loaders?model=" + model, Loader[].class)).hasSize(2);
        }
        long opened = connectionsReceived() - before;

        // Without the pool every read opened one: READS at least. Other clients of this Redis
        // (the test's own, a probe's reconnect) may open a few meanwhile.
        assertThat(opened).isLessThan(READS / 4);
    }

    @Test
    void requestsAloneCannotExhaustThePool() {
        // A request holds at most one pooled connection, beside the shared one, the subscription
        // and background work; an exhausted pool would fail like an unreachable Redis, retried and
        // counted by the circuit breaker.
        assertThat(poolMaxActive).isGreaterThan(requestThreads + 4);
    }
}
