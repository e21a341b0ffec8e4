package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.control.redis.RedisSliceTestSupport;
import io.weightrelay.control.redis.ScriptCall;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.core.script.RedisScript;

/** The commit script alone, against real Redis: the atomic check and the race between commits. */
class CommitScriptTest extends RedisSliceTestSupport {

    private static final RedisScript<List<Object>> COMMIT = ScriptCall.load("commit");
    private static final String PREFIX = RedisTestSupport.uniqueKeyPrefix("commit-script");

    @Override
    protected String prefix() {
        return PREFIX;
    }

    private void generation(String model, long id, String state, Map<String, String> objects) {
        redis.opsForHash()
                .putAll(
                        PREFIX + "gen:" + model + ":" + id,
                        Map.of("state", state, "manifestDigest", "d", "objectsExpected", "2"));
        redis.opsForZSet().add(PREFIX + "model:" + model + ":gens", String.valueOf(id), id);
        if (!objects.isEmpty()) {
            redis.opsForHash().putAll(PREFIX + "gen-objects:" + model + ":" + id, objects);
        }
    }

    private List<Object> commit(String model, long id) {
        return redis.execute(
                COMMIT, List.of(), PREFIX, model, String.valueOf(id), UUID.randomUUID().toString());
    }

    private String state(String model, long id) {
        return (String) redis.opsForHash().get(PREFIX + "gen:" + model + ":" + id, "state");
    }

    @Test
    void refusesAWrongSizeOrMissingChecksumAndTouchesNothing() {
        String model = "m" + UUID.randomUUID();
        redis.opsForHash()
                .putAll(PREFIX + "manifest-sizes:" + model + ":d", Map.of("a", "10", "b", "20"));
        generation(model, 1, "ACTIVE", Map.of());
        redis.opsForValue().set(PREFIX + "model:" + model + ":active", "1");
        generation(
                model, 2, "OPEN", Map.of("a", "10|crc32c:00000000|", "b", "21|crc32c:00000000|"));
        generation(model, 3, "OPEN", Map.of("a", "10|crc32c:00000000|", "b", "20||"));

        assertThat(commit(model, 2))
                .containsExactly("incomplete", "0", "1", "wrong b size 21 expected 20");
        assertThat(commit(model, 3).get(0)).isEqualTo("incomplete");
        assertThat(state(model, 2)).isEqualTo("OPEN");
        assertThat(state(model, 3)).isEqualTo("OPEN");
        assertThat(state(model, 1)).isEqualTo("ACTIVE");
        assertThat(redis.opsForValue().get(PREFIX + "model:" + model + ":active")).isEqualTo("1");
    }

    @Test
    void racingCommitsLeaveExactlyOneActiveGenerationAndNeverGoBackwards() throws Exception {
        String model = "m" + UUID.randomUUID();
        redis.opsForHash()
                .putAll(PREFIX + "manifest-sizes:" + model + ":d", Map.of("a", "10", "b", "20"));
        Map<String, String> complete = Map.of("a", "10|crc32c:00000000|", "b", "20|crc32c:0|");
        int n = 12;
        for (int id = 1; id <= n; id++) {
            generation(model, id, "OPEN", complete);
        }
        ExecutorService pool = Executors.newFixedThreadPool(6);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<List<Object>>> results = new ArrayList<>();
        for (int id = 1; id <= n; id++) {
            long g = id;
            results.add(
                    pool.submit(
                            () -> {
                                start.await();
                                return commit(model, g);
                            }));
        }
        start.countDown();
        int won = 0;
        for (Future<List<Object>> r : results) {
            String code = String.valueOf(r.get().get(0));
            assertThat(code).isIn("ok", "stale");
            won += "ok".equals(code) ? 1 : 0;
        }
        pool.shutdown();
        assertThat(won).isPositive();
        List<Long> active = new ArrayList<>();
        for (long id = 1; id <= n; id++) {
            String state = state(model, id);
            assertThat(state).isIn("ACTIVE", "RETIRED", "OPEN");
            if ("ACTIVE".equals(state)) {
                active.add(id);
            }
        }
        assertThat(active).containsExactly((long) n);
        assertThat(redis.opsForValue().get(PREFIX + "model:" + model + ":active"))
                .isEqualTo(String.valueOf(n));
        long retired =
                java.util.stream.LongStream.rangeClosed(1, n)
                        .filter(id -> "RETIRED".equals(state(model, id)))
                        .count();
        assertThat(retired).as("every winner but the last was retired").isEqualTo(won - 1);
    }
}
