package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.OpenGenerationRequest;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.control.ControlApiTestProperties;
import java.net.http.HttpResponse;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;

/**
 * The service starts while Redis is unreachable, answers 503 problems, and once Redis appears
 * serves everything, pub/sub long-polls included, without a restart. Meanwhile its log names the
 * Redis it cannot reach, within seconds of its start, and says when it answers (issue 52: a service
 * that cannot reach a dependency says so by name, never only by staying unhealthy).
 */
@ControlApiTestProperties
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"relay.redis.key-prefix=wr:late-start-test:"})
@ExtendWith(OutputCaptureExtension.class)
class RedisDownAtStartTest extends PrivateRedisTestSupport {

    /** Its private Redis, not started before the service: the test starts it. */
    @TestConfiguration(proxyBeanMethods = false)
    static class RedisNotStarted extends PrivateRedisConfiguration {

        @Override
        @Bean
        PrivateRedis privateRedis() {
            return new PrivateRedis();
        }
    }

    @Test
    void startsWithoutRedisAndRecoversWhenItAppears(CapturedOutput output) throws Exception {
        String model = newModel();
        assertProblem(
                get("/api/v1/models/" + model + "/generations/active", LOADER),
                503,
                "redis-unavailable");
        String unreachable =
                RedisProbe.UNREACHABLE
                        + "127.0.0.1:"
                        + redis.port()
                        + " (spring.data.redis.host and port): Connection refused";
        long waited = System.nanoTime();
        while (!output.getAll().contains(unreachable)
                && TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - waited) < 15) {
            PrivateRedis.sleep(100);
        }
        assertThat(output.getAll())
                .as("the log names the Redis control-api cannot reach, and why")
                .contains(unreachable);

        redis.start();
        long start = System.nanoTime();
        HttpResponse<String> segments;
        do {
            PrivateRedis.sleep(200);
            segments = get("/api/v1/segments", OPERATOR);
        } while (segments.statusCode() != 200
                && TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start) < 20);
        assertThat(segments.statusCode()).isEqualTo(200);
        // Not just "Redis at <address>": the line saying it cannot be reached contains that too.
        java.util.regex.Pattern answers =
                java.util.regex.Pattern.compile(
                        java.util.regex.Pattern.quote(
                                        RedisProbe.ANSWERS + "127.0.0.1:" + redis.port())
                                + " answers after \\d+ s: control-api serves");
        long answered = System.nanoTime();
        while (!answers.matcher(output.getAll()).find()
                && TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - answered) < 20) {
            PrivateRedis.sleep(100);
        }
        assertThat(output.getAll())
                .as("the log says when the Redis it could not reach answers")
                .containsPattern(answers);

        // Clients retry 503 answers (they carry Retry-After); the first writes may still meet the
        // circuit breaker closing again.
        HttpResponse<String> opened;
        do {
            opened =
                    requestOpen(
                            model, new OpenGenerationRequest(1L, manifest(model), trainers("t0")));
            if (opened.statusCode() == 503) {
                PrivateRedis.sleep(500);
            }
        } while (opened.statusCode() == 503
                && TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start) < 30);
        long g1 = ok(opened, OpenedGeneration.class).getGeneration().getGeneration();
        commitWakesTheLongPoll(model, g1, 0, "woken by pub/sub, not by the periodic re-check");
    }
}
