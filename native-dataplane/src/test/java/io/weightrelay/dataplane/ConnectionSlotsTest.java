package io.weightrelay.dataplane;

import static io.weightrelay.dataplane.TestEngines.transfer;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The built-in engine's connection slots, with owners in child JVMs: idle connections expire on the
 * server and clients reconnect unnoticed; a restarted owner leaves no threads behind in its
 * readers. Threads are counted by the names the engine gives them ({@code dp-stream}: a client's
 * streams to one peer).
 */
class ConnectionSlotsTest {
    @RegisterExtension static final TestScope scope = new TestScope();
    private static final int SIZE = 4 << 20;

    @Test
    void connectionsPastTheIdleTimeoutAreClosedAndTheNextTransferSucceeds() throws Exception {
        PeerProcess owner =
                PeerProcess.start(
                        RedisSupport.URI,
                        scope.prefix(),
                        "node-owner",
                        "idle",
                        SIZE,
                        10000,
                        64,
                        1000);
        scope.closeAfter(owner);
        owner.command("fill 0 " + SIZE + " 3");
        long crc = Long.parseLong(owner.command("crc 0 " + SIZE));
        Dataplane reader = open("node-reader"); // keeps its own connections for 30 s
        RegisteredBuffer dst = reader.registerBuffer(ByteBuffer.allocateDirect(SIZE));
        transfer(reader, TransferRequest.read(dst, 0, "idle", 0, SIZE));

        RawPeer idle = new RawPeer(owner.port());
        scope.closeAfter(idle);
        assertThat(idle.handshake(TestEngines.SECRET, RawPeer.ROLE_PEER))
                .isEqualTo(RawPeer.Outcome.ACCEPTED);
        long start = System.nanoTime();
        assertThat(idle.closedByServer(3000))
                .as("an authenticated connection without a request past the 1 s idle timeout")
                .isTrue();
        assertThat(Duration.ofNanos(System.nanoTime() - start))
                .isGreaterThan(Duration.ofMillis(500));

        // The reader's pooled connections were closed the same way; it reads again unnoticed.
        Thread.sleep(500);
        Patterns.fill(dst.byteBuffer(), 0, SIZE, 99);
        transfer(reader, TransferRequest.read(dst, 0, "idle", 0, SIZE));
        assertThat(Patterns.crc(dst.byteBuffer(), 0, SIZE)).isEqualTo(crc);
    }

    @Test
    void aRestartedOwnersOldStreamThreadsAreGone() throws Exception {
        int before = threadsNamed("dp-stream");
        Dataplane reader = open("node-reader");
        RegisteredBuffer dst = reader.registerBuffer(ByteBuffer.allocateDirect(SIZE));
        int streams = reader.config().tcpStreams();
        for (int restart = 0; restart < 3; restart++) {
            PeerProcess owner =
                    PeerProcess.start(
                            RedisSupport.URI, scope.prefix(), "node-owner", "owned", SIZE);
            scope.closeAfter(owner);
            owner.command("fill 0 " + SIZE + " " + restart);
            long crc = Long.parseLong(owner.command("crc 0 " + SIZE));
            readAfterRestart(reader, dst);
            assertThat(Patterns.crc(dst.byteBuffer(), 0, SIZE)).isEqualTo(crc);
            assertThat(threadsNamedWithin("dp-stream", before + streams) - before)
                    .as("the reader's stream threads after %d restarts of its owner", restart)
                    .isEqualTo(streams);
            owner.kill(); // a crash: its descriptor stays until the next owner takes the name
        }
    }

    /** Reads the whole segment; the first try after a restart may meet the old owner's address. */
    private static void readAfterRestart(Dataplane reader, RegisteredBuffer dst)
            throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        for (; ; ) {
            try {
                transfer(reader, TransferRequest.read(dst, 0, "owned", 0, SIZE));
                return;
            } catch (PeerGoneException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    private Dataplane open(String label) {
        Dataplane dp = Dataplane.open(TestEngines.config(label, scope.prefix()).build());
        scope.closeAfter(dp);
        return dp;
    }

    /**
     * {@link #threadsNamed} once it is {@code expected}, or after 5 s whatever it is then (a thread
     * just started names itself first thing, but may not have run yet).
     */
    private static int threadsNamedWithin(String name, int expected) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        int n = threadsNamed(name);
        while (n != expected && System.nanoTime() < deadline) {
            Thread.sleep(20);
            n = threadsNamed(name);
        }
        return n;
    }

    /** Threads of this JVM whose name (as the kernel knows it) is {@code name}. */
    private static int threadsNamed(String name) {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            return (int)
                    tasks.filter(
                                    t -> {
                                        try {
                                            return Files.readString(t.resolve("comm"))
                                                    .strip()
                                                    .equals(name);
                                        } catch (IOException e) {
                                            return false; // the thread ended meanwhile
                                        }
                                    })
                            .count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
