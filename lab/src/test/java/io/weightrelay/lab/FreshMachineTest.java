package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 52: the first command on a fresh machine. Nothing answers on the lab's Redis and there is
 * no redis-server: {@code ./relay demo} must say what to install within seconds, not wait out a
 * three-minute health check of services that cannot reach Redis. With redis-server there, it starts
 * one of its own, runs the whole story on it and stops it. And a lab pointed at a Redis that does
 * not answer is refused at once, naming it.
 *
 * <p>The whole story is the demo's (once held by a {@code DemoTest} of its own, which ran it a
 * second time): with the tiny model, one lab whose instances serve both modes at once (a
 * compatibility and a parameter-direct instance on each rollout node, in one rollout group), three
 * generations, then one loader per mode restarted onto the active generation. Every byte is
 * checked, the store is read exactly once per needed byte in every update, and publishing moved no
 * byte over tcp: all of it read from the demo's {@code --json} lines.
 */
class FreshMachineTest {

    /** {@code ./relay} as the launcher runs it (this JVM's class path), in a child JVM. */
    private static ProcessBuilder relay(Path tmp, String... args) {
        List<String> command =
                new java.util.ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-Xmx512m",
                                "-XX:TieredStopAtLevel=1",
                                "-Drelay.home=" + ServiceProcess.home(),
                                "-Djava.io.tmpdir=" + tmp,
                                // a loaded machine (the whole build on two cores) starts services
                                // slowly: what this test is about fails within seconds anyway
                                "-Drelay.lab.healthy-seconds=900",
                                "-cp",
                                System.getProperty("java.class.path"),
                                "io.weightrelay.lab.Relay"));
        command.addAll(List.of(args));
        return new ProcessBuilder(command);
    }

    @Test
    void theDemoWithoutRedisStartsItsOwnRunsTheWholeStoryAndStopsIt() throws Exception {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        Path out = tmp.resolve("fresh-machine-demo.out");
        Path errLog = tmp.resolve("fresh-machine-demo.err");
        int closed = ServiceProcess.freePort();
        ProcessBuilder demo =
                relay(tmp, "demo", "--model", "tiny", "--instances", "4", "--tp", "2", "--json")
                        .redirectOutput(out.toFile())
                        .redirectError(errLog.toFile());
        // Nothing answers on the lab's Redis; redis-server is installed (on PATH).
        demo.environment().put("RELAY_LAB_REDIS", "127.0.0.1:" + closed);
        demo.environment().remove("RELAY_LAB_REDIS_SERVER");

        Process p = demo.start();
        boolean ended = p.waitFor(30, TimeUnit.MINUTES);
        if (!ended) {
            p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        String err = Files.readString(errLog, StandardCharsets.UTF_8);
        assertThat(ended).as("the demo ended; stderr:%n%s", err).isTrue();
        assertThat(p.exitValue()).as("exit code; stderr:%n%s", err).isZero();
        java.util.regex.Matcher own =
                java.util.regex.Pattern.compile(
                                "no Redis answers at 127\\.0\\.0\\.1:"
                                        + closed
                                        + " \\(RELAY_LAB_REDIS; .*\\): started redis-server on"
                                        + " 127\\.0\\.0\\.1:(\\d+) for this run")
                        .matcher(err);
        assertThat(own.find()).as("it says it started its own; stderr:%n%s", err).isTrue();
        int port = Integer.parseInt(own.group(1));
        List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8);
        assertThat(lines).as("one JSON line per generation and the summary").hasSize(4);
        assertThat(lines.get(3))
                .contains("\"verified\":true")
                .contains("\"min_store_read_ratio\":1.0000")
                .contains("\"max_store_read_ratio\":1.0000");
        theStoryHeld(lines);
        assertThat(io.weightrelay.lab.cluster.LabRedis.answersPing("127.0.0.1", port))
                .as("its own redis-server stopped with it")
                .isFalse();
        assertThat(io.weightrelay.lab.cluster.LabRedis.answersPing("127.0.0.1", closed))
                .as("and it started nothing where it was pointed")
                .isFalse();
    }

    /**
     * The demo's story held, from its {@code --json} lines (three generations, then the summary):
     * both modes on every rollout node, every update single pull and exact, every byte checked, no
     * byte published over tcp, and one loader per mode restarted onto the active generation.
     */
    private static void theStoryHeld(List<String> lines) {
        JsonNode report = JSON.readTree(lines.get(3));
        Map<String, String> modeByInstance = new LinkedHashMap<>();
        report.path("mode_by_instance")
                .properties()
                .forEach(e -> modeByInstance.put(e.getKey(), e.getValue().asString()));
        assertThat(modeByInstance)
                .containsEntry("i0000", "compat")
                .containsEntry("i0001", "direct")
                .containsEntry("i0002", "compat")
                .containsEntry("i0003", "direct");
        List<JsonNode> generations = lines.subList(0, 3).stream().map(JSON::readTree).toList();
        assertThat(generations).hasSize(3);
        assertThat(generations)
                .extracting(g -> g.path("generation").asLong())
                .isSorted()
                .doesNotHaveDuplicates();
        for (JsonNode g : generations) {
            long generation = g.path("generation").asLong();
            assertThat(g.path("store_read_bytes").asLong())
                    .as("generation %d: single pull", generation)
                    .isEqualTo(g.path("store_bytes_needed").asLong())
                    .isPositive();
            assertThat(g.path("bytes_received").asLong())
                    .as("generation %d: delivery equals the target", generation)
                    .isEqualTo(g.path("target_stored_bytes").asLong());
            assertThat(g.path("bytes_verified").asLong()).isPositive();
            assertThat(g.path("publish_tcp_bytes").asLong())
                    .as("publishing moves no network byte")
                    .isZero();
            List<String> modes = new ArrayList<>();
            g.path("update_s_by_mode").properties().forEach(e -> modes.add(e.getKey()));
            assertThat(modes).containsExactlyInAnyOrder("compat", "direct");
        }
        List<String> restarted = new ArrayList<>();
        report.path("restarted").forEach(i -> restarted.add(i.asString()));
        assertThat(restarted).containsExactly("i0000", "i0001");
        assertThat(report.path("restart_store_read_bytes").asLong())
                .as("each restarted instance reads what it needs, once")
                .isEqualTo(report.path("restart_store_bytes_needed").asLong());
        assertThat(report.path("restart_bytes_verified").asLong()).isPositive();
        assertThat(report.path("min_store_read_ratio").asDouble()).isEqualTo(1.0);
        assertThat(report.path("max_store_read_ratio").asDouble()).isEqualTo(1.0);
        assertThat(report.path("verified").asBoolean()).isTrue();
        assertThat(lines.get(3))
                .contains("\"verified\":true")
                .contains("\"min_store_read_ratio\":1.0000")
                .contains("\"max_store_read_ratio\":1.0000")
                .contains("\"publish_tcp_bytes\":0")
                .contains("\"update_s_by_mode\":{\"compat\":[");
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Test
    void theDemoWithoutRedisOrRedisServerFailsWithinTenSecondsNamingThePackage() throws Exception {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        Path emptyPath = Files.createDirectories(tmp.resolve("fresh-machine-path"));
        Path out = tmp.resolve("fresh-machine.out");
        Path errLog = tmp.resolve("fresh-machine.err");
        int closed = ServiceProcess.freePort();
        ProcessBuilder relay =
                new ProcessBuilder(
                                List.of(
                                        Path.of(System.getProperty("java.home"), "bin", "java")
                                                .toString(),
                                        "-Xmx256m",
                                        "-XX:TieredStopAtLevel=1",
                                        "-Drelay.home=" + ServiceProcess.home(),
                                        "-Djava.io.tmpdir=" + tmp,
                                        "-cp",
                                        System.getProperty("java.class.path"),
                                        "io.weightrelay.lab.Relay",
                                        "demo",
                                        "--json"))
                        .redirectOutput(out.toFile())
                        .redirectError(errLog.toFile());
        // A fresh machine: no Redis on the lab's address, no redis-server on PATH.
        relay.environment().put("PATH", emptyPath.toString());
        relay.environment().put("RELAY_LAB_REDIS", "127.0.0.1:" + closed);
        relay.environment().remove("RELAY_LAB_REDIS_SERVER");

        long started = System.nanoTime();
        Process p = relay.start();
        boolean ended = p.waitFor(10, TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - started) / 1e9;
        if (!ended) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String err = Files.readString(errLog, StandardCharsets.UTF_8);
        assertThat(ended)
                .as("./relay demo ended within 10 s (%.1f s); stderr:%n%s", seconds, err)
                .isTrue();
        assertThat(p.exitValue()).as("exit code; stderr:%n%s", err).isEqualTo(3);
        assertThat(err)
                .contains("relay demo: cannot run here")
                .contains("127.0.0.1:" + closed)
                .contains("apt-get install redis-server")
                .doesNotContain("Exception");
        assertThat(Files.readString(out, StandardCharsets.UTF_8)).isEmpty();
    }

    @Test
    void aLabWhoseRedisDoesNotAnswerIsRefusedWithinSecondsNamingIt() throws Exception {
        int closed = ServiceProcess.freePort();
        LabCluster.Spec spec =
                LabCluster.Spec.of("tiny", 2, 1, Mode.COMPAT)
                        .on(new LabCluster.Site("127.0.0.1", closed, ServiceProcess.home()));

        long started = System.nanoTime();
        Throwable thrown;
        try (LabCluster lab =
                org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                        java.time.Duration.ofSeconds(10), () -> LabCluster.start(spec))) {
            thrown = null;
        } catch (IllegalStateException e) {
            thrown = e;
        }
        assertThat(thrown).as("the lab did not start").isNotNull();
        assertThat(thrown.getMessage())
                .contains("control-api")
                .contains("redis://127.0.0.1:" + closed)
                .contains("does not answer");
        assertThat((System.nanoTime() - started) / 1e9).isLessThan(10);
    }
}
