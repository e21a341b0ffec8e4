package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.testkit.process.FastStart;
import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The services' fast start ({@link FastStart}) on the real executable jars: the layout and class
 * data archive it makes are ones the JVM accepts, and what it cannot prepare starts the plain way.
 */
class FastStartTest {

    @TempDir Path dir;

    /**
     * A publisher's jar (whose data plane needs a Redis to start) gets an archive, and a JVM that
     * must use it ({@code -Xshare:on} refuses to start otherwise) starts the service from it.
     */
    @Test
    void aServiceStartsFromTheArchiveItsTrainingMade() throws Exception {
        Path jar = copyJar("publisher-service");
        Set<Path> shmBefore = shm();

        List<String> args = FastStart.jarArgs(jar);

        // the training's publisher made its segment in the layout's tmp, gone with it: nothing
        // of it stays in the machine's /dev/shm
        assertThat(shm()).as("/dev/shm after the training").isSubsetOf(shmBefore);

        assertThat(args).hasSize(3);
        assertThat(args.get(0)).startsWith("-XX:SharedArchiveFile=");
        Path archive = Path.of(args.get(0).substring("-XX:SharedArchiveFile=".length()));
        assertThat(archive).isRegularFile().startsWith(dir.resolve("fast-start"));
        assertThat(Files.size(archive)).isGreaterThan(1 << 20);
        assertThat(args.subList(1, 3))
                .containsExactly("-jar", archive.resolveSibling(jar.getFileName()).toString());
        assertThat(FastStart.jarArgs(jar)).as("made once").isSameAs(args);

        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of("-Xshare:on", "-XX:+UseSerialGC", "-Xmx256m"));
        command.add("-Dspring.context.exit=onRefresh");
        command.addAll(args);
        command.add("--server.port=0");
        command.add("--server.address=127.0.0.1");
        command.add("--relay.dataplane.redis-uri=redis://127.0.0.1:1");
        Path log = dir.resolve("start.log");
        Process p =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile())
                        .start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        // It fails on the unreachable Redis, which it names: past class loading, from the
        // archive (with -Xshare:on an archive the JVM cannot map stops it before any of that).
        assertThat(Files.readString(log))
                .doesNotContain("Unable to use shared archive")
                .contains("cannot reach Redis at redis://127.0.0.1:1");
    }

    /**
     * A rebuilt jar (another size or modification time) gets a layout of its own, and making it
     * removes the earlier build's, lock file included: a service never starts from classes of a jar
     * that is gone, and {@code target/} does not fill up with layouts.
     */
    @Test
    void aRebuiltJarGetsANewLayoutAndTheOldOneGoes() throws Exception {
        Path jar = copyJar("loader-service");
        Path first = Path.of(FastStart.jarArgs(jar).get(2)).getParent();
        assertThat(first).isDirectory();

        Files.setLastModifiedTime(
                jar, FileTime.fromMillis(Files.getLastModifiedTime(jar).toMillis() + 60_000));
        Path second = Path.of(FastStart.jarArgs(jar).get(2)).getParent();

        assertThat(second).isDirectory().isNotEqualTo(first);
        assertThat(first).doesNotExist();
        try (Stream<Path> layouts = Files.list(dir.resolve("fast-start"))) {
            assertThat(layouts.map(p -> p.getFileName().toString()))
                    .containsExactlyInAnyOrder(
                            second.getFileName().toString(), second.getFileName() + ".lock");
        }
    }

    /** A jar that is no Spring Boot jar cannot be extracted: it starts with a plain -jar. */
    @Test
    void whatCannotBeExtractedStartsThePlainWay() throws Exception {
        Path jar = Files.writeString(dir.resolve("not-a-service.jar"), "not a zip");

        assertThat(FastStart.jarArgs(jar)).containsExactly("-jar", jar.toString());
    }

    private static Set<Path> shm() throws Exception {
        try (Stream<Path> files = Files.list(Path.of("/dev/shm"))) {
            return files.collect(Collectors.toSet());
        }
    }

    /** A copy of {@code module}'s built jar in this test's directory, for the test to change. */
    private Path copyJar(String module) throws Exception {
        return Files.copy(
                ServiceProcess.findJar(ServiceProcess.home(), module),
                dir.resolve(module + "-exec.jar"));
    }
}
