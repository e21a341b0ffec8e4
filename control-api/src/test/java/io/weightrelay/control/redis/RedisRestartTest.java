package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.Generation;
import io.weightrelay.control.ControlApiTestProperties;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;

/**
 * Kills this test's private Redis in the middle of traffic and starts it again on the same port and
 * data directory (append-only file, fsync always, so committed state survives the kill): requests
 * fail fast with 503 problems while it is away, the service recovers on its own, and no committed
 * generation is lost.
 */
@ControlApiTestProperties
@Import(PrivateRedisConfiguration.class)
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"relay.redis.key-prefix=wr:restart-test:"})
class RedisRestartTest extends PrivateRedisTestSupport {

    @Test
    void requestsFailWith503WhileRedisIsDownAndRecoverWithNothingLost() throws Exception {
        String model = newModel();
        long g1 = publish(model, 1);
        long g2 = open(model, 2).getGeneration().getGeneration();
        registerAll(model, g2);
        long committed = ok(commit(model, g2), Generation.class).getGeneration();

        AtomicBoolean running = new AtomicBoolean(true);
        List<HttpResponse<String>> seen = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> traffic =
                CompletableFuture.runAsync(
                        () -> {
                            while (running.get()) {
                                seen.add(
                                        get(
                                                "/api/v1/models/" + model + "/generations/active",
                                                LOADER));
                                PrivateRedis.sleep(50);
                            }
                        });
        PrivateRedis.sleep(300);
        redis.kill();

        long down = System.nanoTime();
        HttpResponse<String> failed =
                get("/api/v1/models/" + model + "/generations/active", LOADER);
        assertProblem(failed, 503, "redis-unavailable");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - down))
                .as("an outage is answered fast, not after a hang")
                .isLessThan(5000);
        assertThat(failed.headers().firstValue("Retry-After")).isPresent();
        assertProblem(commit(model, 99), 503, "redis-unavailable");
        PrivateRedis.sleep(1500);

        redis.start();
        long back = System.nanoTime();
        HttpResponse<String> recovered;
        do {
            PrivateRedis.sleep(200);
            recovered = get("/api/v1/models/" + model + "/generations/active", LOADER);
        } while (recovered.statusCode() != 200
                && TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - back) < 20);
        running.set(false);
        traffic.get(10, TimeUnit.SECONDS);

        assertThat(ok(recovered, Generation.class).getGeneration())
                .as("the committed generation survived")
                .isEqualTo(committed);
        assertThat(seen).extracting(HttpResponse::statusCode).containsOnly(200, 503);
        assertThat(seen).extracting(HttpResponse::statusCode).contains(200, 503);
        for (HttpResponse<String> r : seen) {
            if (r.statusCode() == 503) {
                assertProblem(r, 503, "redis-unavailable");
            }
        }
        assertThat(
                        ok(
                                        get(
                                                "/api/v1/models/" + model + "/generations/" + g1,
                                                OPERATOR),
                                        Generation.class)
                                .getState())
                .hasToString("RETIRED");

        // Full recovery: writes, scripts and pub/sub long-polls work again.
        long g3 = open(model, 3).getGeneration().getGeneration();
        commitWakesTheLongPoll(
                model, g3, committed, "woken by pub/sub, resubscribed after the restart");
    }
}
