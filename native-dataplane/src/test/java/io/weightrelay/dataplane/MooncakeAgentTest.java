package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.dataplane.MooncakeAgent.Mapped;
import io.weightrelay.dataplane.MooncakeAgent.Read;
import io.weightrelay.dataplane.MooncakeAgent.Span;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client of the Mooncake agent against the real Mooncake: the pinned wheel's {@code
 * mooncake_master} and agents, all in a network namespace this test makes with only its loopback up
 * (Mooncake's Transfer Engine listens on the wildcard address whatever it is told).
 */
class MooncakeAgentTest {
    private static final int MIB = 1 << 20;
    private static final Path VENV = MooncakeMaster.VENV;
    private static final Path PYTHON_SRC = MooncakeMaster.PYTHON_SRC;

    private static MooncakeMaster master;
    private static Path masterLog;

    @TempDir Path tmp;
    private final List<MooncakeAgent> agents = new ArrayList<>();
    private final List<Path> files = new ArrayList<>();

    @BeforeAll
    static void startMaster() throws Exception {
        masterLog = Files.createTempFile("mooncake-master", ".log");
        master = MooncakeMaster.start("wr-mcj", masterLog);
    }

    @AfterAll
    static void stopMaster() throws Exception {
        if (master != null) {
            master.close();
        }
    }

    @AfterEach
    void closeAll() throws IOException {
        agents.forEach(MooncakeAgent::close);
        for (Path f : files) {
            Files.deleteIfExists(f);
        }
    }

    private static void run(String... cmd) throws IOException, InterruptedException {
        MooncakeMaster.run(cmd);
    }

    private MooncakeAgent.Options options(long segmentSize, Path pythonPath, Duration timeout) {
        String name = "agent-" + agents.size();
        return new MooncakeAgent.Options(
                VENV.resolve("bin/python"),
                pythonPath,
                master.prefix(),
                tmp.resolve(name + ".sock"),
                MooncakeMaster.RPC,
                "127.0.0.1",
                segmentSize,
                "tcp",
                MooncakeConfig.P2P_HANDSHAKE,
                tmp.resolve(name + ".log"),
                Duration.ofSeconds(60),
                timeout);
    }

    private MooncakeAgent agent(long segmentSize) {
        return agent(options(segmentSize, PYTHON_SRC, Duration.ofSeconds(60)));
    }

    private MooncakeAgent agent(MooncakeAgent.Options options) {
        MooncakeAgent a = MooncakeAgent.start(options);
        agents.add(a);
        return a;
    }

    /** A shared-memory file of {@code size} bytes, mapped here. */
    private MappedByteBuffer shm(long size) throws IOException {
        Path path = Path.of("/dev/shm", "wr-test-mooncake-j-" + UUID.randomUUID());
        files.add(path);
        try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
            f.setLength(size);
            return f.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, size);
        }
    }

    private Path last() {
        return files.get(files.size() - 1);
    }

    @Test
    void aBatchPutByOneAgentReadsBackByteExactThroughAnother() throws IOException {
        MooncakeAgent publisher = agent(64L * MIB);
        MooncakeAgent reader = agent(0);
        assertThat(publisher.ready().version()).isEqualTo("0.3.13.post1");
        byte[] payload = new byte[8 * MIB];
        new Random(47).nextBytes(payload);
        MappedByteBuffer src = shm(8 * MIB);
        src.put(0, payload);
        Mapped s = publisher.map(last(), 8 * MIB);
        MappedByteBuffer dst = shm(8 * MIB);
        Mapped d = reader.map(last(), 8 * MIB);
        String run = UUID.randomUUID().toString();
        List<String> keys = List.of(run + "/a", run + "/b", run + "/c");
        assertThat(
                        publisher.put(
                                s,
                                keys,
                                List.of(0L, 1L * MIB, 4L * MIB),
                                List.of(1L * MIB, 3L * MIB, 4L * MIB),
                                null))
                .containsExactly(0, 0, 0);
        List<List<Long>> got =
                reader.getIntoRanges(
                        d,
                        List.of(
                                new Read(keys.get(0), List.of(new Span(0, MIB - 4096, 4096))),
                                new Read(run + "/missing", List.of(new Span(4096, 0, 16))),
                                new Read(
                                        keys.get(2),
                                        List.of(
                                                new Span(MIB, 0, 2L * MIB),
                                                new Span(3L * MIB, 4L * MIB - 1, 1)))));
        assertThat(got).containsExactly(List.of(4096L), List.of(-704L), List.of(2L * MIB, 1L));
        assertThat(slice(dst, 0, 4096)).isEqualTo(slice(payload, MIB - 4096, 4096));
        assertThat(slice(dst, MIB, 2 * MIB)).isEqualTo(slice(payload, 4 * MIB, 2 * MIB));
        assertThat(dst.get(3 * MIB)).isEqualTo(payload[8 * MIB - 1]);
        List<List<String>> replicas = reader.replicas(keys);
        assertThat(replicas).allSatisfy(r -> assertThat(r).hasSize(1));
        assertThat(replicas)
                .allSatisfy(r -> assertThat(r).containsExactly(publisher.ready().storeEndpoint()));
        assertThat(publisher.ready().storeEndpoint()).startsWith("127.0.0.1:");
    }

    @Test
    void aMooncakeFailureIsTypedWithItsCodeAndKey() throws IOException {
        MooncakeAgent loader = agent(0);
        shm(MIB);
        Mapped m = loader.map(last(), MIB);
        String target = "127.0.0.1:50099"; // nothing listens there in the namespace
        assertThatThrownBy(() -> loader.write(m, target, List.of(new long[] {0, 4096, 4096})))
                .isInstanceOfSatisfying(
                        MooncakeOperationException.class,
                        e -> {
                            assertThat(e.op()).isEqualTo("write");
                            assertThat(e.key()).isEqualTo(target);
                            assertThat(e.getMessage()).contains(target, "pid");
                        });
    }

    @Test
    void anAgentOfAnotherMooncakeVersionIsRefusedNamingIt() throws IOException {
        Path fake = tmp.resolve("site");
        Files.createDirectories(fake.resolve("mooncake"));
        Files.writeString(fake.resolve("mooncake/__init__.py"), "");
        Path info = fake.resolve("mooncake_transfer_engine_non_cuda-0.3.12.dist-info");
        Files.createDirectories(info);
        Files.writeString(
                info.resolve("METADATA"),
                "Metadata-Version: 2.1\nName: mooncake-transfer-engine-non-cuda\n"
                        + "Version: 0.3.12\n");
        Files.writeString(info.resolve("top_level.txt"), "mooncake\n");
        Path both = Path.of(fake + ":" + PYTHON_SRC);
        assertThatThrownBy(() -> agent(options(0, both, Duration.ofSeconds(60))))
                .isInstanceOfSatisfying(
                        MooncakeAgentException.class,
                        e -> {
                            assertThat(e.agentError()).isEqualTo("MooncakeVersionError");
                            assertThat(e.getMessage()).contains("0.3.12", "0.3.13.post1");
                        });
    }

    @Test
    void anAgentThatDiesMidCommandFailsItNamingTheAgentAndIsStartedAgain() throws Exception {
        MooncakeAgent a = agent(16L * MIB);
        MappedByteBuffer buffer = shm(MIB);
        Mapped m = a.map(last(), MIB);
        long pid = a.ready().pid();
        assertThat(a.process().pid()).isEqualTo(pid);
        run("kill", "-STOP", Long.toString(pid)); // the command below is surely in flight
        CompletableFuture<List<Integer>> inFlight =
                CompletableFuture.supplyAsync(
                        () ->
                                a.put(
                                        m,
                                        List.of(UUID.randomUUID() + "/k"),
                                        List.of(0L),
                                        List.of(64L),
                                        null));
        Thread.sleep(500);
        assertThat(inFlight).isNotDone();
        run("kill", "-KILL", Long.toString(pid));
        assertThat(inFlight)
                .failsWithin(Duration.ofSeconds(30))
                .withThrowableOfType(java.util.concurrent.ExecutionException.class)
                .havingCause()
                .isInstanceOf(MooncakeAgentGoneException.class)
                .withMessageContaining("pid " + pid)
                .withMessageContaining("'put'")
                .withMessageContaining("exit status 137");
        // the next command starts a new agent, which maps the file again
        buffer.put(0, (byte) 42);
        String key = UUID.randomUUID() + "/after";
        assertThat(a.put(m, List.of(key), List.of(0L), List.of(4096L), null)).containsExactly(0);
        assertThat(a.restarts()).isEqualTo(1);
        assertThat(a.ready().pid()).isNotEqualTo(pid);
        assertThat(a.getIntoRanges(m, List.of(new Read(key, List.of(new Span(8192, 0, 1))))))
                .containsExactly(List.of(1L));
        assertThat(buffer.get(8192)).isEqualTo((byte) 42);
    }

    @Test
    void anAgentThatStopsAnsweringIsKilledAtTheCommandTimeoutNotAHang() throws Exception {
        MooncakeAgent a = agent(options(0, PYTHON_SRC, Duration.ofSeconds(2)));
        long pid = a.ready().pid();
        run("kill", "-STOP", Long.toString(pid));
        long t0 = System.nanoTime();
        assertThatThrownBy(a::ping)
                .isInstanceOf(MooncakeAgentGoneException.class)
                .hasMessageContaining("pid " + pid)
                .hasMessageContaining("did not answer 'ping' within PT2S and was killed");
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(20));
        a.ping(); // started again
        assertThat(a.restarts()).isEqualTo(1);
    }

    @Test
    void anAgentKilledBetweenCommandsFailsTheNextOneOnceSayingItsObjectsAreGone() throws Exception {
        MooncakeAgent a = agent(0);
        long pid = a.ready().pid();
        a.process().destroyForcibly().waitFor();
        assertThatThrownBy(a::ping)
                .isInstanceOf(MooncakeAgentGoneException.class)
                .hasMessageContaining("pid " + pid)
                .hasMessageContaining("objects in its segment are gone");
        a.ping();
        assertThat(a.restarts()).isEqualTo(1);
    }

    private static byte[] slice(MappedByteBuffer b, int offset, int length) {
        byte[] out = new byte[length];
        b.get(offset, out);
        return out;
    }

    private static byte[] slice(byte[] b, int offset, int length) {
        return java.util.Arrays.copyOfRange(b, offset, offset + length);
    }
}
