package io.weightrelay.testkit.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;

/**
 * A group of services is waited for as one ({@link
 * ServiceProcess#awaitHealthy(java.util.Collection, Duration, ServiceProcess.Dependencies)}): a
 * service that exits early, or a dependency that does not answer, is named within seconds, whatever
 * the order, never after the whole health wait.
 */
class ServiceProcessHealthTest {

    /** A service that starts and never turns healthy (it listens nowhere). */
    public static final class NeverHealthy {
        public static void main(String[] args) throws InterruptedException {
            System.out.println("never-healthy: up, listening nowhere");
            Thread.sleep(120_000);
        }
    }

    /** A service that gives up at once, as one whose Redis refuses its first command. */
    public static final class GivesUp {
        public static void main(String[] args) {
            System.out.println("gives-up: cannot reach Redis at 127.0.0.1:1");
            System.exit(1);
        }
    }

    /**
     * A control-api whose Redis does not answer: alive, never healthy, and saying why in its log
     * (the words and shape of control-api's own line).
     */
    public static final class CannotReachRedis {
        public static void main(String[] args) throws InterruptedException {
            System.out.println("INFO control-api: Started ControlApiApplication in 7.4 seconds");
            System.out.println(
                    "ERROR i.w.control.redis.RedisProbe : cannot reach Redis at 127.0.0.1:1"
                            + " (spring.data.redis.host and port): Connection refused; control-api"
                            + " answers 503 redis-unavailable and /actuator/health DOWN until it"
                            + " does, asking again every 500 ms");
            Thread.sleep(120_000);
        }
    }

    /** The same, whose Redis answers a few seconds later (and which is still not healthy). */
    public static final class RedisAnswersLater {
        public static void main(String[] args) throws InterruptedException {
            System.out.println(
                    "ERROR i.w.control.redis.RedisProbe : cannot reach Redis at 127.0.0.1:1"
                            + " (spring.data.redis.host and port): Connection refused; ...");
            System.out.println(
                    "INFO i.w.control.redis.RedisProbe : Redis at 127.0.0.1:1 answers after 3 s:"
                            + " control-api serves");
            Thread.sleep(120_000);
        }
    }

    /**
     * A control-api on a machine loaded far past its cores: its Redis handshakes time out for a few
     * seconds while Redis is up, and it says so, then that Redis answers.
     */
    public static final class RedisSlowForAWhile {
        public static void main(String[] args) throws InterruptedException {
            System.out.println(
                    "ERROR i.w.control.redis.RedisProbe : cannot reach Redis at 127.0.0.1:1"
                            + " (spring.data.redis.host and port): Connection initialization"
                            + " timed out after 500 millisecond(s); ...");
            Thread.sleep(3_000);
            System.out.println(
                    "INFO i.w.control.redis.RedisProbe : Redis at 127.0.0.1:1 answers after 3 s:"
                            + " control-api serves");
            Thread.sleep(120_000);
        }
    }

    private static ServiceProcess start(String name, Class<?> main, Path logs) {
        return ServiceProcess.startMain(
                name,
                System.getProperty("java.class.path"),
                main.getName(),
                "32m",
                List.of("-XX:TieredStopAtLevel=1"),
                List.of(),
                logs);
    }

    /** What {@code awaitHealthy} refuses {@code services} with; fails when they turn healthy. */
    private static AbstractThrowableAssert<?, ? extends Throwable> refusal(
            List<ServiceProcess> services,
            Duration wait,
            ServiceProcess.Dependencies dependencies) {
        return assertThatThrownBy(() -> ServiceProcess.awaitHealthy(services, wait, dependencies))
                .isInstanceOf(IllegalStateException.class);
    }

    private static Path logs() throws Exception {
        return Files.createTempDirectory(
                Path.of(System.getProperty("java.io.tmpdir")), "wr-health-");
    }

    @Test
    void aServiceThatExitsEarlyIsNamedAtOnceWhileAnEarlierOneStillStarts() throws Exception {
        Path logs = logs();
        try (ServiceProcess slow = start("never-healthy", NeverHealthy.class, logs);
                ServiceProcess quitter = start("gives-up", GivesUp.class, logs)) {
            long started = System.nanoTime();
            refusal(List.of(slow, quitter), Duration.ofMinutes(3), Optional::empty)
                    .hasMessageContaining("gives-up exited early")
                    .hasMessageContaining("cannot reach Redis at 127.0.0.1:1");
            assertThat((System.nanoTime() - started) / 1e9).isLessThan(15);
        }
    }

    @Test
    void aDependencyThatDoesNotAnswerIsNamedWithTheServicesWaitingForIt() throws Exception {
        Path logs = logs();
        try (ServiceProcess control = start("control-api", NeverHealthy.class, logs);
                ServiceProcess loader = start("loader-i0", NeverHealthy.class, logs)) {
            long started = System.nanoTime();
            refusal(
                            List.of(control, loader),
                            Duration.ofMinutes(3),
                            () -> Optional.of("the Redis at redis://127.0.0.1:1 does not answer"))
                    .hasMessageContaining("control-api, loader-i0 cannot become healthy")
                    .hasMessageContaining("the Redis at redis://127.0.0.1:1 does not answer");
            assertThat((System.nanoTime() - started) / 1e9).isLessThan(5);
        }
    }

    @Test
    void aServiceThatSaysItCannotReachADependencyIsNamedWithinSecondsWithWhatItSaid()
            throws Exception {
        Path logs = logs();
        try (ServiceProcess control = start("control-api", CannotReachRedis.class, logs)) {
            long started = System.nanoTime();
            refusal(List.of(control), Duration.ofMinutes(3), Optional::empty)
                    .hasMessageContaining(
                            "control-api cannot become healthy: it says cannot reach Redis at"
                                    + " 127.0.0.1:1 (spring.data.redis.host and port): Connection"
                                    + " refused");
            assertThat((System.nanoTime() - started) / 1e9).isLessThan(15);
        }
    }

    @Test
    void aDependencyThatAnswersAgainIsNotHeldAgainstTheService() throws Exception {
        Path logs = logs();
        try (ServiceProcess control = start("control-api", RedisAnswersLater.class, logs)) {
            refusal(List.of(control), Duration.ofSeconds(6), Optional::empty)
                    .hasMessageContaining("control-api not healthy within PT6S")
                    .hasMessageNotContaining("cannot become healthy");
            assertThat(control.unreachableDependency()).isEmpty();
        }
    }

    @Test
    void aServiceThatCannotReachADependencyTheWaiterReachesIsGivenAFewSeconds() throws Exception {
        Path logs = logs();
        try (ServiceProcess control = start("control-api", RedisSlowForAWhile.class, logs)) {
            refusal(
                            List.of(control),
                            ServiceProcess.UNREACHABLE_GRACE.plusSeconds(3),
                            Optional::empty)
                    .hasMessageContaining("control-api not healthy within")
                    .hasMessageNotContaining("cannot become healthy");
        }
    }

    @Test
    void aServiceThatCannotReachADependencyTheWaiterCannotReachEitherIsNamedAtOnce()
            throws Exception {
        Path logs = logs();
        try (ServiceProcess control = start("control-api", CannotReachRedis.class, logs)) {
            Thread.sleep(1_500); // its line is in the log before the first check
            long started = System.nanoTime();
            refusal(
                            List.of(control),
                            Duration.ofMinutes(3),
                            () -> Optional.of("the Redis at 127.0.0.1:1 is down"))
                    .hasMessageContaining(
                            "control-api cannot become healthy: it says cannot reach");
            assertThat((System.nanoTime() - started) / 1e9)
                    .isLessThan(ServiceProcess.UNREACHABLE_GRACE.toSeconds());
        }
    }
}
