package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A segment descriptor read from Redis is refused, logged and never mapped unless its shared-memory
 * path is the segment's own file directly inside this engine's shm directory: each way a writer of
 * Redis could redirect an engine (another segment's file, a file elsewhere, {@code ..}, a relative
 * path, a symbolic link, another host's segment under this node label) fails with its specific
 * exception, and the owner's bytes stay untouched.
 */
class DescriptorValidationTest {
    @RegisterExtension static final TestScope scope = new TestScope();
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int SIZE = 1 << 16;

    private final List<Path> files = new ArrayList<>();
    private final List<LogRecord> logged = new CopyOnWriteArrayList<>();
    private final Handler capture =
            new Handler() {
                @Override
                public void publish(LogRecord record) {
                    logged.add(record);
                }

                @Override
                public void flush() {}

                @Override
                public void close() {}
            };
    private final Logger engineLog = Logger.getLogger(TransferEngine.class.getName());
    private Dataplane owner;
    private Segment pub;

    @BeforeEach
    void ownerWithASegment() {
        engineLog.addHandler(capture);
        owner = open(TestEngines.config("node-h9", scope.prefix()).hostId("host-h9"));
        pub = owner.createSegment("h9-pub", SIZE);
        Patterns.fill(pub.byteBuffer(), 0, SIZE, 11);
        owner.createSegment("h9-other", SIZE);
    }

    @AfterEach
    void cleanUp() throws Exception {
        engineLog.removeHandler(capture);
        for (Path f : files) {
            Files.deleteIfExists(f);
        }
    }

    private Dataplane open(DataplaneConfig.Builder b) {
        Dataplane dp = Dataplane.open(b.build());
        scope.closeAfter(dp);
        return dp;
    }

    private String fileOf(String segment) {
        return "wr-" + scope.prefix().replaceAll("[^A-Za-z0-9._-]", "_") + segment;
    }

    /** A fresh reader on the owner's node and host (it would map the file) reads 4 KiB. */
    private void readAsNeighbour(String segment) {
        Dataplane reader = open(TestEngines.config("node-h9", scope.prefix()).hostId("host-h9"));
        RegisteredBuffer into = reader.registerBuffer(ByteBuffer.allocateDirect(4096));
        reader.engine().transfer(List.of(TransferRequest.read(into, 0, segment, 0, 4096)), WAIT);
    }

    private void tamper(String segment, Map<String, String> fields) {
        String key = scope.prefix() + "seg:" + segment;
        Map<String, String> h = new HashMap<>(RedisSupport.hash(key.replace(segment, "h9-pub")));
        h.putAll(fields);
        RedisSupport.call(
                redis -> {
                    redis.hset(key, h);
                    return redis.sadd(scope.prefix() + "segments", segment);
                });
    }

    private void assertRefused(String segment, String shm, String why) {
        logged.clear();
        assertThatThrownBy(() -> readAsNeighbour(segment))
                .as("shm=%s", shm)
                .isInstanceOfSatisfying(
                        InvalidDescriptorException.class,
                        e -> {
                            assertThat(e.segment()).isEqualTo(segment);
                            assertThat(e.shmPath()).isEqualTo(shm);
                            assertThat(e.error()).isEqualTo(DataplaneError.DENIED);
                        })
                .hasMessageContaining(segment)
                .hasMessageContaining(why)
                .hasMessageContaining("nothing was mapped");
        assertThat(logged)
                .as("the refusal is logged")
                .anySatisfy(r -> assertThat(r.getMessage()).contains(segment).contains(why));
        Patterns.assertHolds(pub.byteBuffer(), 0, SIZE, 11);
    }

    @Test
    void theOwnDescriptorIsAcceptedAndMappedLocally() {
        Dataplane reader = open(TestEngines.config("node-h9", scope.prefix()).hostId("host-h9"));
        RegisteredBuffer into = reader.registerBuffer(ByteBuffer.allocateDirect(4096));
        reader.engine().transfer(List.of(TransferRequest.read(into, 0, "h9-pub", 0, 4096)), WAIT);
        assertThat(reader.counters().localRead()).isEqualTo(4096);
        assertThat(Patterns.crc(into.byteBuffer(), 0, 4096))
                .isEqualTo(Patterns.crc(pub.byteBuffer(), 0, 4096));
    }

    @Test
    void anotherSegmentsFileIsRefused() {
        String other = "/dev/shm/" + fileOf("h9-other");
        tamper("h9-pub", Map.of("shm", other));
        assertRefused("h9-pub", other, "does not name the segment's own file");
    }

    @Test
    void aFileOutsideTheShmDirectoryIsRefused() throws Exception {
        tamper("h9-pub", Map.of("shm", "/etc/passwd"));
        assertRefused("h9-pub", "/etc/passwd", "does not name the segment's own file");
        // The right file name in another directory.
        Path dir = Files.createTempDirectory("wr-h9-elsewhere");
        Path elsewhere = dir.resolve(fileOf("h9-pub"));
        Files.write(elsewhere, new byte[SIZE]);
        files.add(elsewhere);
        files.add(dir);
        tamper("h9-pub", Map.of("shm", elsewhere.toString()));
        assertRefused("h9-pub", elsewhere.toString(), "is outside this engine's shm directory");
    }

    @Test
    void dotDotAndRelativePathsAreRefused() {
        String dotdot = "/dev/shm/../dev/shm/" + fileOf("h9-pub");
        tamper("h9-pub", Map.of("shm", dotdot));
        assertRefused("h9-pub", dotdot, "is not a normalized absolute path");
        String relative = fileOf("h9-pub");
        tamper("h9-pub", Map.of("shm", relative));
        assertRefused("h9-pub", relative, "is not a normalized absolute path");
    }

    @Test
    void aSymbolicLinkIsRefused() throws Exception {
        Path victim = Files.createTempFile("wr-h9-victim", ".bin");
        files.add(victim);
        Files.write(victim, new byte[SIZE]);
        Path link = Path.of("/dev/shm", fileOf("h9-link"));
        files.add(link);
        Files.createSymbolicLink(link, victim);
        tamper("h9-link", Map.of("shm", link.toString(), "size", String.valueOf(SIZE)));
        assertRefused("h9-link", link.toString(), "is a symbolic link");
        assertThat(Files.readAllBytes(victim)).containsOnly(0);
    }

    @Test
    void anotherHostsSegmentUnderThisNodeLabelIsRefused() {
        tamper("h9-pub", Map.of("hostid", "host-elsewhere"));
        assertThatThrownBy(() -> readAsNeighbour("h9-pub"))
                .isInstanceOf(ForeignHostException.class)
                .hasMessageContaining("host-elsewhere")
                .hasMessageContaining("host-h9");
    }
}
