package io.weightrelay.dataplane;

import static io.weightrelay.dataplane.TestEngines.transfer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Binding, advertising and host identity: what makes engines on several hosts find each other and
 * never mistake another host's segment for one of their own.
 */
class DataplaneAddressingTest {
    @RegisterExtension static final TestScope scope = new TestScope();

    private Dataplane open(DataplaneConfig.Builder b) {
        Dataplane dp = Dataplane.open(b.build());
        scope.closeAfter(dp);
        return dp;
    }

    /** b writes a pattern into a's segment over tcp and reads it back. */
    private static void roundTrip(Dataplane a, Dataplane b, int seed) {
        Segment seg = a.createReceiveSegment("seg-" + seed, 1 << 20);
        RegisteredBuffer src = b.registerBuffer(ByteBuffer.allocateDirect(1 << 20));
        Patterns.fill(src.byteBuffer(), 0, 1 << 20, seed);
        Counters before = b.counters();
        transfer(b, TransferRequest.write(src, 0, seg.name(), 0, 1 << 20));
        assertThat(b.counters().minus(before).tcpWritten()).isEqualTo(1 << 20);
        Patterns.assertHolds(seg.byteBuffer(), 0, 1 << 20, seed);
    }

    @Test
    void aWildcardBindNeedsAnAdvertiseHostThatIsNone() {
        for (String wildcard : List.of("0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0")) {
            assertThatThrownBy(
                            () ->
                                    TestEngines.config("n", scope.prefix())
                                            .tcpBindHost(wildcard)
                                            .build())
                    .isInstanceOf(DataplaneException.class)
                    .hasMessageContaining("advertiseHost");
            assertThatThrownBy(
                            () ->
                                    TestEngines.config("n", scope.prefix())
                                            .advertiseHost(wildcard)
                                            .build())
                    .isInstanceOf(DataplaneException.class)
                    .hasMessageContaining("advertiseHost");
        }
        Dataplane a =
                open(
                        TestEngines.config("node-a", scope.prefix())
                                .tcpBindHost("0.0.0.0")
                                .advertiseHost("127.0.0.1"));
        Dataplane b = open(TestEngines.config("node-b", scope.prefix()));
        roundTrip(a, b, 1);
        assertThat(RedisSupport.hash(scope.prefix() + "seg:seg-1"))
                .containsEntry("host", "127.0.0.1");
    }

    @Test
    void ipv6AndHostNamesBindAndConnect() {
        Dataplane v6 = open(TestEngines.config("node-v6", scope.prefix()).tcpBindHost("::1"));
        Dataplane named =
                open(TestEngines.config("node-named", scope.prefix()).tcpBindHost("localhost"));
        Dataplane dual =
                open(
                        TestEngines.config("node-dual", scope.prefix())
                                .tcpBindHost("::")
                                .advertiseHost("localhost"));
        roundTrip(v6, named, 2); // named connects to [::1]
        roundTrip(named, v6, 3); // v6 connects to localhost
        roundTrip(dual, v6, 4);
        assertThat(RedisSupport.hash(scope.prefix() + "seg:seg-2")).containsEntry("host", "::1");
        assertThatThrownBy(
                        () ->
                                Dataplane.open(
                                        TestEngines.config("n", scope.prefix())
                                                .tcpBindHost("no-such-host.invalid")
                                                .build()))
                .isInstanceOf(DataplaneException.class)
                .hasMessageContaining("tcpBindHost")
                .hasMessageContaining("no-such-host.invalid");
    }

    @Test
    void theHostIdentityIsDerivedFromTheMachineAndTheShmDirectory() throws Exception {
        Dataplane dp = open(TestEngines.config("node-a", scope.prefix()));
        String machine = Files.readString(Path.of("/etc/machine-id")).trim();
        assertThat(dp.hostId()).startsWith(machine + ":/dev/shm:");
        Dataplane explicit =
                open(TestEngines.config("node-b", scope.prefix()).hostId("rack-4/host-9"));
        assertThat(explicit.hostId()).isEqualTo("rack-4/host-9");
        explicit.createSegment("described", 4096);
        assertThat(RedisSupport.hash(scope.prefix() + "seg:described"))
                .containsEntry("hostid", "rack-4/host-9");
    }

    @Test
    void theSameLabelOnAnotherHostIsRefusedAndNeverMapped() {
        Dataplane owner = open(TestEngines.config("node-a", scope.prefix()).hostId("host-1"));
        Dataplane twin = open(TestEngines.config("node-a", scope.prefix()).hostId("host-2"));
        Segment seg = owner.createSegment("pub", 1 << 20);
        Patterns.fill(seg.byteBuffer(), 0, 1 << 20, 5);
        RegisteredBuffer src = twin.registerBuffer(ByteBuffer.allocateDirect(4096));
        assertThatThrownBy(() -> transfer(twin, TransferRequest.write(src, 0, "pub", 0, 4096)))
                .isInstanceOf(ForeignHostException.class)
                .hasMessageContaining("host-1")
                .hasMessageContaining("host-2")
                .hasMessageContaining("nodeLabel");
        Patterns.assertHolds(seg.byteBuffer(), 0, 1 << 20, 5);
        assertThat(twin.counters().localWritten() + twin.counters().tcpTotal()).isZero();
        // A name it owns cannot be taken either: the owner is alive.
        assertThatThrownBy(() -> twin.createSegment("pub", 4096))
                .isInstanceOf(DataplaneException.class)
                .hasMessageContaining("pub");
    }

    @Test
    void aNameOwnedOnAnotherHostThatAdvertisesLoopbackIsNeverTakenOver() {
        // As another host's engine would have published it: loopback, and nothing here answers.
        RedisSupport.deadOwnerDescriptor(
                scope.prefix(),
                "remote",
                Map.of("node", "node-far", "hostid", "far-host", "engine", "e-1", "kind", "store"));
        Dataplane here = open(TestEngines.config("node-here", scope.prefix()).hostId("near-host"));
        assertThatThrownBy(() -> here.createSegment("remote", 4096))
                .isInstanceOf(DataplaneException.class)
                .hasMessageContaining("far-host")
                .hasMessageContaining("cannot tell whether it is alive");
        assertThat(RedisSupport.hash(scope.prefix() + "seg:remote"))
                .containsEntry("hostid", "far-host");
        // On its own host the same dead descriptor is taken over (a restarted owner).
        Dataplane restarted =
                open(TestEngines.config("node-far", scope.prefix()).hostId("far-host"));
        restarted.createSegment("remote", 4096).close();
    }

    @Test
    void aLeftoverFileOrLinkIsReplacedNeverReusedOrFollowed() throws Exception {
        Dataplane dp = open(TestEngines.config("node-a", scope.prefix()));
        String file = "wr-" + scope.prefix().replaceAll("[^A-Za-z0-9._-]", "_");
        Path leftover = Path.of("/dev/shm", file + "left");
        Files.write(leftover, new byte[] {1, 2, 3, 4});
        Path victim = Files.createTempFile("wr-h1-victim", ".bin");
        Path link = Path.of("/dev/shm", file + "linked");
        try {
            Files.write(victim, new byte[] {9, 9, 9});
            Files.createSymbolicLink(link, victim);
            Segment left = dp.createSegment("left", 4096);
            assertThat(left.byteBuffer().get(0)).isZero(); // a new file, not the old bytes
            Segment linked = dp.createSegment("linked", 4096);
            linked.byteBuffer().put(0, (byte) 7);
            assertThat(Files.isSymbolicLink(link)).isFalse();
            assertThat(Files.readAllBytes(victim)).containsExactly(9, 9, 9);
        } finally {
            Files.deleteIfExists(victim);
            Files.deleteIfExists(link);
            Files.deleteIfExists(leftover);
        }
    }
}
