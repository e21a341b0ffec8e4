package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.Generation;
import io.weightrelay.control.ControlApiClientSupport;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * What the tests that run control-api against a Redis of their own ({@link
 * PrivateRedisConfiguration}), which they stop, start or pause, share: the server, and the check
 * that pub/sub long-polls work.
 */
abstract class PrivateRedisTestSupport extends ControlApiClientSupport {

    /** The test's own Redis. */
    @Autowired protected PrivateRedis redis;

    /**
     * Fills open generation {@code g} of {@code model} and commits it while a long-poll for the
     * generation after {@code after} waits: the poll returns {@code g} well within the periodic
     * re-check, so pub/sub woke it ({@code why} says what that proves).
     */
    protected void commitWakesTheLongPoll(String model, long g, long after, String why)
            throws Exception {
        registerAll(model, g);
        CompletableFuture<HttpResponse<String>> poll = pollNextGeneration(model, after);
        PrivateRedis.sleep(1500);
        long committed = System.nanoTime();
        assertThat(commit(model, g).statusCode()).isEqualTo(200);
        assertThat(ok(poll.get(25, TimeUnit.SECONDS), Generation.class).getGeneration())
                .isEqualTo(g);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - committed))
                .as(why)
                .isLessThan(2500);
    }
}
