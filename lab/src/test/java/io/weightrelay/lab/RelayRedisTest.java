package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.lab.cli.Invocation;
import io.weightrelay.lab.cli.RedisNeed;
import io.weightrelay.lab.cluster.LabRedis;
import io.weightrelay.lab.cluster.RunRedis;
import io.weightrelay.testkit.process.ServiceProcess;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The launcher provides the Redis a command needs before the command runs (issue 52): the
 * configured Redis when it answers, else a redis-server of the run's own, stopped when the run
 * ends; without redis-server it refuses at once, naming what to install. The machine's Redis is
 * only ever asked PING here.
 */
class RelayRedisTest {

    /** A command that records which Redis it was given and whether that one answered. */
    static final class RedisSeen {
        static volatile String address;
        static volatile boolean answered;

        static final Invocation<Void> RUN =
                new Invocation<>(RedisSeen.class, null, options -> RedisSeen.run());

        static void run() {
            address = System.getProperty(RunRedis.PROPERTY);
            RunRedis.Address a = RunRedis.configured();
            answered = LabRedis.answersPing(a.host(), a.port());
        }
    }

    private final ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
    private final PrintStream err = new PrintStream(errBytes, true, StandardCharsets.UTF_8);

    @AfterEach
    void forget() {
        System.clearProperty(RunRedis.PROPERTY);
        System.clearProperty(LabRedis.SERVER_PROPERTY);
        RedisSeen.address = null;
        RedisSeen.answered = false;
    }

    @Test
    void startsItsOwnRedisWhenTheConfiguredOneDoesNotAnswerAndStopsItAtTheEnd() throws Exception {
        int closed = ServiceProcess.freePort(); // nothing listens there
        System.setProperty(RunRedis.PROPERTY, "127.0.0.1:" + closed);

        Relay.run(
                "relay demo",
                RedisSeen.RUN,
                new RedisNeed(RedisNeed.Kind.ANSWERING, null, null),
                err);

        String said = errBytes.toString(StandardCharsets.UTF_8);
        assertThat(said)
                .contains("no Redis answers at 127.0.0.1:" + closed)
                .contains("started redis-server on 127.0.0.1:");
        assertThat(RedisSeen.address).startsWith("127.0.0.1:").isNotEqualTo("127.0.0.1:" + closed);
        assertThat(RedisSeen.answered).as("the command's Redis answered PING").isTrue();
        int own = Integer.parseInt(RedisSeen.address.substring("127.0.0.1:".length()));
        assertThat(said).contains("127.0.0.1:" + own);
        assertThat(LabRedis.answersPing("127.0.0.1", own))
                .as("the run's own Redis is stopped when the run ends")
                .isFalse();
        assertThat(System.getProperty(RunRedis.PROPERTY))
                .as("the launcher's choice does not outlive the run")
                .isEqualTo("127.0.0.1:" + closed);
    }

    @Test
    void theRedisFlagsWinOverTheConfiguredOne() throws Exception {
        int closed = ServiceProcess.freePort();
        RedisTestSupport.Endpoint machine = RedisTestSupport.endpoint();
        System.setProperty(RunRedis.PROPERTY, "127.0.0.1:" + closed);

        Relay.run(
                "relay bench publish",
                RedisSeen.RUN,
                new RedisNeed(RedisNeed.Kind.ANSWERING, machine.host(), machine.port()),
                err);

        assertThat(RedisSeen.address).isEqualTo(machine.host() + ":" + machine.port());
        assertThat(RedisSeen.answered).isTrue();
        assertThat(errBytes.toString(StandardCharsets.UTF_8)).doesNotContain("redis-server");
    }

    @Test
    void usesTheConfiguredRedisWhenItAnswersAndStartsNothing() throws Exception {
        RedisTestSupport.Endpoint machine = RedisTestSupport.endpoint();
        System.setProperty(RunRedis.PROPERTY, machine.host() + ":" + machine.port());

        Relay.run(
                "relay demo",
                RedisSeen.RUN,
                new RedisNeed(RedisNeed.Kind.ANSWERING, null, null),
                err);

        assertThat(RedisSeen.address).isEqualTo(machine.host() + ":" + machine.port());
        assertThat(RedisSeen.answered).isTrue();
        assertThat(errBytes.toString(StandardCharsets.UTF_8)).doesNotContain("redis-server");
        assertThat(LabRedis.answersPing(machine.host(), machine.port()))
                .as("the machine's Redis is left as it was")
                .isTrue();
    }

    @Test
    void aConfiguredRedisServerThatDoesNotExistIsRefusedNamingThePackage() {
        int closed = ServiceProcess.freePort();
        System.setProperty(RunRedis.PROPERTY, "127.0.0.1:" + closed);
        System.setProperty(LabRedis.SERVER_PROPERTY, "/nonexistent/bin/redis-server");

        long started = System.nanoTime();
        assertThatThrownBy(
                        () ->
                                Relay.run(
                                        "relay demo",
                                        RedisSeen.RUN,
                                        new RedisNeed(RedisNeed.Kind.ANSWERING, null, null),
                                        err))
                .isInstanceOf(Relay.CannotRunHere.class)
                .hasMessageContaining("relay demo: cannot run here")
                .hasMessageContaining("127.0.0.1:" + closed)
                .hasMessageContaining("/nonexistent/bin/redis-server")
                .hasMessageContaining("apt-get install redis-server");
        assertThat((System.nanoTime() - started) / 1e9).isLessThan(10);
        assertThat(RedisSeen.address).as("the command never ran").isNull();
    }

    @Test
    void theFaultSuiteIsRefusedWithoutRedisServerEvenWhenTheMachinesRedisAnswers() {
        System.setProperty(LabRedis.SERVER_PROPERTY, "/nonexistent/bin/redis-server");

        assertThatThrownBy(
                        () ->
                                Relay.run(
                                        "relay faults",
                                        RedisSeen.RUN,
                                        new RedisNeed(RedisNeed.Kind.SERVER, null, null),
                                        err))
                .isInstanceOf(Relay.CannotRunHere.class)
                .hasMessageContaining("relay faults: cannot run here")
                .hasMessageContaining("apt-get install redis-server");
        assertThat(RedisSeen.address).as("the command never ran").isNull();
    }

    @Test
    void aFailingMainStillStopsTheRunsOwnRedis() throws Exception {
        int closed = ServiceProcess.freePort();
        System.setProperty(RunRedis.PROPERTY, "127.0.0.1:" + closed);
        Path dirsBefore = Path.of(System.getProperty("java.io.tmpdir"));
        long before = countRedisDirs(dirsBefore);

        assertThatThrownBy(
                        () ->
                                Relay.run(
                                        "relay demo",
                                        new Invocation<Void>(
                                                Failing.class, null, options -> Failing.run()),
                                        new RedisNeed(RedisNeed.Kind.ANSWERING, null, null),
                                        err))
                .hasMessage("the story broke");
        int own = Failing.port;
        assertThat(own).isPositive().isNotEqualTo(closed);
        assertThat(LabRedis.answersPing("127.0.0.1", own)).isFalse();
        assertThat(countRedisDirs(dirsBefore)).as("its directory is gone").isEqualTo(before);
    }

    /** A command that breaks once it has seen its Redis. */
    static final class Failing {
        static volatile int port;

        static void run() {
            port = RunRedis.configured().port();
            throw new IllegalStateException("the story broke");
        }
    }

    private static long countRedisDirs(Path tmp) throws Exception {
        try (var dirs = Files.list(tmp)) {
            return dirs.filter(d -> d.getFileName().toString().startsWith("wr-redis-")).count();
        }
    }
}
