package io.weightrelay.lab.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.TestJvm;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A lab's own redis-server never outlives the JVM that started it (issue 52: "stops it at the end,
 * Ctrl-C included"), even when that JVM never reaches {@code close()}.
 */
class LabRedisTest {

    /** Starts a Redis of its own, says its port, and waits to be ended from outside. */
    public static final class Starter {
        public static void main(String[] args) throws Exception {
            LabRedis redis = LabRedis.start(Path.of(args[0]), false);
            System.out.println(redis.port());
            System.out.flush();
            Thread.sleep(120_000);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INT", "KILL"})
    void itsRedisStopsWhenTheJvmEndsWithoutClosingIt(String signal) throws Exception {
        Path dir =
                Path.of(System.getProperty("java.io.tmpdir"))
                        .resolve("wr-redis-watch-" + signal + "-" + System.nanoTime());
        Process child =
                new ProcessBuilder(TestJvm.command("64m", Starter.class, dir.toString()))
                        .redirectError(ProcessBuilder.Redirect.INHERIT)
                        .start();
        int port;
        try (BufferedReader out =
                new BufferedReader(
                        new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            port = Integer.parseInt(out.readLine().strip());
            assertThat(LabRedis.answersPing("127.0.0.1", port)).isTrue();

            // Ctrl-C (SIGINT to the JVM), or a kill nothing can catch.
            new ProcessBuilder("kill", "-" + signal, String.valueOf(child.pid()))
                    .start()
                    .waitFor(10, TimeUnit.SECONDS);
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        } finally {
            child.destroyForcibly();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (LabRedis.answersPing("127.0.0.1", port) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertThat(LabRedis.answersPing("127.0.0.1", port))
                .as("redis-server on %d still answers after its JVM got SIG%s", port, signal)
                .isFalse();
        // The JVM that made it never closed it: its directory is this test's to remove.
        org.springframework.util.FileSystemUtils.deleteRecursively(dir);
    }
}
