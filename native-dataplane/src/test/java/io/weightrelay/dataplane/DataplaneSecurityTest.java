package io.weightrelay.dataplane;

import static io.weightrelay.dataplane.TestEngines.transfer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.dataplane.internal.Metadata;
import io.weightrelay.dataplane.internal.SegmentDescriptor;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Hostile and broken peers against a real engine in its own JVM (server timeout 1 s, at most 8
 * connections), spoken to byte by byte ({@link RawPeer}) or through engines with the wrong
 * configuration. After each, the engine still serves a legitimate peer and no byte of its segment
 * changed.
 */
class DataplaneSecurityTest {
    @RegisterExtension static final TestScope scope = new TestScope();
    private static final int SIZE = 4 << 20;
    private static final int CAP = 8;
    private static final byte[] WRONG = "some other deployment".getBytes(StandardCharsets.UTF_8);

    private PeerProcess owner;
    private Dataplane friend;
    private RegisteredBuffer scratch;
    private long baseline;

    @BeforeEach
    void start() throws Exception {
        owner =
                PeerProcess.start(
                        RedisSupport.URI,
                        scope.prefix(),
                        "node-owner",
                        "target",
                        SIZE,
                        1000,
                        CAP,
                        PeerProcess.IDLE_TIMEOUT_MS);
        scope.closeAfter(owner);
        owner.command("fill 0 " + SIZE + " 7");
        owner.command("put obj 65536 5"); // an allocation to try freeing
        baseline = Long.parseLong(owner.command("crc 0 " + SIZE));
        friend = open(TestEngines.config("node-friend", scope.prefix()));
        scratch = friend.registerBuffer(ByteBuffer.allocateDirect(SIZE));
        assertStillServingAndUnchanged();
    }

    private Dataplane open(DataplaneConfig.Builder config) {
        Dataplane dp = Dataplane.open(config.connectTimeout(Duration.ofSeconds(5)).build());
        scope.closeAfter(dp);
        return dp;
    }

    private RawPeer raw() throws Exception {
        RawPeer p = new RawPeer(owner.port()).withIncarnations(this::incarnation);
        scope.closeAfter(p);
        return p;
    }

    /** The incarnation the segment's descriptor names now (0 for an unknown segment). */
    private long incarnation(String segment) {
        try (Metadata metadata =
                Metadata.connect(RedisSupport.URI, scope.prefix(), Duration.ofSeconds(5))) {
            return metadata.segment(segment).map(SegmentDescriptor::incarnation).orElse(0L);
        }
    }

    private RawPeer authenticated(int role) throws Exception {
        RawPeer p = raw();
        assertThat(p.handshake(TestEngines.SECRET, role)).isEqualTo(RawPeer.Outcome.ACCEPTED);
        return p;
    }

    /** A legitimate peer reads the whole segment over tcp: the bytes are what they were. */
    private void assertStillServingAndUnchanged() {
        transfer(friend, TransferRequest.read(scratch, 0, "target", 0, SIZE));
        assertThat(Patterns.crc(scratch.byteBuffer(), 0, SIZE)).isEqualTo(baseline);
        assertThat(Long.parseLong(owner.command("crc 0 " + SIZE))).isEqualTo(baseline);
    }

    @Test
    void aPeerWithoutTheSecretIsRefusedBeforeAnyByteMoves() throws Exception {
        Dataplane stranger =
                open(DataplaneConfig.builder("node-stranger").keyPrefix(scope.prefix()));
        RegisteredBuffer src = stranger.registerBuffer(ByteBuffer.allocateDirect(4096));
        assertThatThrownBy(
                        () -> transfer(stranger, TransferRequest.write(src, 0, "target", 0, 4096)))
                .isInstanceOf(PermissionDeniedException.class)
                .hasMessageContaining("target");
        // The old protocol, a request without any handshake: closed, nothing served.
        RawPeer old = raw();
        boolean resetWhileSending = false;
        try {
            old.send(RawPeer.header(RawPeer.OP_WRITE, 0, 16, "target"));
            old.send(new byte[16]);
        } catch (java.net.SocketException e) {
            // the server closed on the header already: the refusal, seen by the sender
            resetWhileSending = true;
        }
        assertThat(resetWhileSending || old.closedByServer(5000)).isTrue();
        // A hello answered with a made-up proof.
        RawPeer guesser = raw();
        assertThat(guesser.handshake(new byte[0], RawPeer.ROLE_PEER))
                .isEqualTo(RawPeer.Outcome.DENIED);
        assertThat(guesser.closedByServer(5000)).isTrue();
        assertStillServingAndUnchanged();
    }

    @Test
    void aWrongSecretIsRefusedInBothDirections() throws Exception {
        Dataplane impostor =
                open(
                        DataplaneConfig.builder("node-impostor")
                                .keyPrefix(scope.prefix())
                                .secret(WRONG));
        RegisteredBuffer src = impostor.registerBuffer(ByteBuffer.allocateDirect(4096));
        assertThatThrownBy(
                        () -> transfer(impostor, TransferRequest.write(src, 0, "target", 0, 4096)))
                .isInstanceOf(PermissionDeniedException.class);
        // ... and a peer of the deployment refuses to talk to the impostor's server.
        Segment fake = impostor.createSegment("fake", 4096);
        Patterns.fill(fake.byteBuffer(), 0, 4096, 9);
        assertThatThrownBy(
                        () -> transfer(friend, TransferRequest.read(scratch, 0, "fake", 0, 4096)))
                .isInstanceOf(PermissionDeniedException.class);
        RawPeer wrong = raw();
        assertThat(wrong.handshake(WRONG, RawPeer.ROLE_PEER)).isEqualTo(RawPeer.Outcome.DENIED);
        assertThat(wrong.closedByServer(5000)).isTrue();
        RawPeer wrongRemover = raw();
        assertThat(wrongRemover.handshake(WRONG, RawPeer.ROLE_REMOVER))
                .isEqualTo(RawPeer.Outcome.DENIED);
        assertThat(wrongRemover.closedByServer(5000)).isTrue();
        assertStillServingAndUnchanged();
    }

    @Test
    void aReplayedHandshakeIsRefused() throws Exception {
        RawPeer recorded = authenticated(RawPeer.ROLE_PEER);
        byte[] hello = recorded.lastHello;
        byte[] proof = recorded.lastProof;
        for (int i = 0; i < 3; i++) {
            RawPeer replay = raw();
            assertThat(replay.replay(hello, proof))
                    .isIn(RawPeer.Outcome.DENIED, RawPeer.Outcome.CLOSED);
            assertThat(replay.closedByServer(5000)).isTrue();
        }
        // The recorded connection itself is still good: it was authenticated for real.
        recorded.send(recorded.request(RawPeer.OP_READ, 0, 64, "target"));
        assertThat(recorded.reply().status()).isZero();
        assertThat(recorded.read(64)).isEqualTo(segmentBytes(0, 64));
        assertStillServingAndUnchanged();
    }

    /**
     * Store capacity holds published objects: a peer (a loader) may read it, never write it. The
     * write is refused with its own code, its payload read and dropped (the connection stays in
     * step), and through the API the writer gets a typed exception naming the segment and the role.
     */
    @Test
    void aPeerMayNotWriteIntoAStoreSegment() throws Exception {
        RawPeer peer = authenticated(RawPeer.ROLE_PEER);
        peer.send(peer.request(RawPeer.OP_WRITE, 0, 4096, "target"));
        peer.send(new byte[4096]);
        assertThat(peer.reply().status()).isEqualTo(DataplaneError.READ_ONLY.code());
        peer.send(peer.request(RawPeer.OP_READ, 0, 64, "target")); // in step, still served
        assertThat(peer.reply().status()).isZero();
        assertThat(peer.read(64)).isEqualTo(segmentBytes(0, 64));
        RegisteredBuffer src = friend.registerBuffer(ByteBuffer.allocateDirect(4096));
        assertThatThrownBy(() -> transfer(friend, TransferRequest.write(src, 0, "target", 0, 4096)))
                .isInstanceOfSatisfying(
                        StoreSegmentWriteRefusedException.class,
                        e -> assertThat(e.subject()).isEqualTo("target"))
                .hasMessageContaining("'target'")
                .hasMessageContaining("role peer");
        assertStillServingAndUnchanged();
        // A storer (a client-only publisher the owner allocates for) still writes there.
        RawPeer storer = authenticated(RawPeer.ROLE_STORER);
        byte[] bytes = segmentBytes(0, 4096);
        storer.send(storer.request(RawPeer.OP_WRITE, 0, 4096, "target"));
        storer.send(bytes);
        assertThat(storer.reply().status()).isZero();
        assertStillServingAndUnchanged();
    }

    /**
     * Every request carries a MAC of its header and name under the connection's key and its
     * sequence number: a header altered on the path, a request replayed (or sent out of order) is
     * refused by closing the connection, before anything is read or written.
     */
    @Test
    void aTamperedOrReplayedRequestClosesTheConnection() throws Exception {
        RawPeer replayer = authenticated(RawPeer.ROLE_PEER);
        byte[] request = replayer.request(RawPeer.OP_READ, 0, 64, "target");
        replayer.send(request);
        assertThat(replayer.reply().status()).isZero();
        replayer.read(64);
        replayer.send(request);
        assertThat(replayer.closedByServer(5000)).as("closed after a replayed request").isTrue();

        RawPeer reordered = authenticated(RawPeer.ROLE_PEER);
        byte[] first = reordered.request(RawPeer.OP_READ, 0, 64, "target");
        byte[] second = reordered.request(RawPeer.OP_READ, 64, 64, "target");
        reordered.send(second);
        assertThat(reordered.closedByServer(5000)).as("closed after a reordered request").isTrue();

        RawPeer tampered = authenticated(RawPeer.ROLE_REMOVER);
        byte[] write = tampered.request(RawPeer.OP_WRITE, 0, 64, "target");
        write[8] = 64; // the offset, changed after the MAC was made
        tampered.send(write);
        tampered.send(new byte[64]);
        assertThat(tampered.closedByServer(5000)).as("closed after a tampered header").isTrue();

        RawPeer unsigned = authenticated(RawPeer.ROLE_PEER);
        unsigned.send(RawPeer.header(RawPeer.OP_READ, 0, 64, "target"));
        unsigned.send(new byte[16]); // sixteen bytes where the MAC belongs
        assertThat(unsigned.closedByServer(5000)).as("closed without a valid MAC").isTrue();
        assertThat(first).isNotEqualTo(second);
        assertStillServingAndUnchanged();
    }

    /**
     * A service given only the peer key (a loader) can prove neither the remover nor the storer
     * role, and an engine configured so refuses to start claiming them; an engine holding only the
     * peer key does not accept a remover either.
     */
    @Test
    void anEngineWithOnlyThePeerKeyCannotHandshakeAsRemoverOrStorer() throws Exception {
        RoleKeys loaders = RoleKeys.derive(TestEngines.SECRET, DataplaneRole.PEER);
        for (int role : new int[] {RawPeer.ROLE_REMOVER, RawPeer.ROLE_STORER}) {
            RawPeer p = raw();
            assertThat(p.handshakeWithKey(loaders.key(DataplaneRole.PEER), role))
                    .as("role %d with the peer key", role)
                    .isEqualTo(RawPeer.Outcome.DENIED);
            assertThat(p.closedByServer(5000)).isTrue();
        }
        assertThatThrownBy(
                        () ->
                                TestEngines.config("loader", scope.prefix())
                                        .roleKeys(loaders)
                                        .remover(true)
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("claims role remover but holds no remover key");
        // A loader's engine accepts peers, and refuses a remover (even with the right key) at
        // the challenge: it holds no remover key to check one with.
        Dataplane loader =
                open(TestEngines.config("node-loader", scope.prefix()).roleKeys(loaders));
        Segment receive = loader.createReceiveSegment("loader-receive", 4096);
        RawPeer remover = new RawPeer(loader.tcpPort());
        scope.closeAfter(remover);
        assertThat(remover.handshake(TestEngines.SECRET, RawPeer.ROLE_REMOVER))
                .isEqualTo(RawPeer.Outcome.REFUSED);
        RawPeer peer = new RawPeer(loader.tcpPort()).withIncarnations(this::incarnation);
        scope.closeAfter(peer);
        assertThat(peer.handshake(TestEngines.SECRET, RawPeer.ROLE_PEER))
                .isEqualTo(RawPeer.Outcome.ACCEPTED);
        peer.send(peer.request(RawPeer.OP_WRITE, 0, 16, receive.name()));
        peer.send(new byte[16]);
        assertThat(peer.reply().status()).isZero(); // peers write into receive segments
        assertStillServingAndUnchanged();
    }

    @Test
    void truncatedHellosAndHeadersAreClosed() throws Exception {
        RawPeer shortHello = raw();
        shortHello.send(java.util.Arrays.copyOf(RawPeer.hello(1, new byte[32]), 20));
        assertThat(shortHello.closedByServer(5000)).isTrue();
        RawPeer shortHeader = authenticated(RawPeer.ROLE_PEER);
        shortHeader.send(
                java.util.Arrays.copyOf(
                        shortHeader.request(RawPeer.OP_WRITE, 0, 64, "target"), 10));
        assertThat(shortHeader.closedByServer(5000)).isTrue();
        RawPeer shortName = authenticated(RawPeer.ROLE_PEER);
        byte[] h = shortName.request(RawPeer.OP_READ, 0, 64, "target");
        shortName.send(java.util.Arrays.copyOf(h, h.length - 3));
        assertThat(shortName.closedByServer(5000)).isTrue();
        assertStillServingAndUnchanged();
    }

    @Test
    void aSlowSenderThatStopsMidRequestIsClosed() throws Exception {
        RawPeer silentStranger = raw(); // connects and never says a word
        RawPeer midHello = raw();
        midHello.send(java.util.Arrays.copyOf(RawPeer.hello(1, new byte[32]), 12));
        RawPeer midHeader = authenticated(RawPeer.ROLE_PEER);
        midHeader.send(
                java.util.Arrays.copyOf(midHeader.request(RawPeer.OP_READ, 0, 64, "target"), 16));
        RawPeer midName = authenticated(RawPeer.ROLE_PEER);
        byte[] h = midName.request(RawPeer.OP_WRITE, 0, 64, "target");
        midName.send(java.util.Arrays.copyOf(h, h.length - 1));
        long start = System.nanoTime();
        for (RawPeer p : List.of(silentStranger, midHello, midHeader, midName)) {
            assertThat(p.closedByServer(10_000)).isTrue();
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
        assertStillServingAndUnchanged();

        // Mid-payload: the bytes that arrived landed (the writer is authenticated and could have
        // sent them whole); the connection is closed and nothing else of the segment moved.
        RawPeer midPayload = authenticated(RawPeer.ROLE_PEER);
        byte[] part = new byte[100];
        midPayload.send(midPayload.request(RawPeer.OP_WRITE, 8192, 1 << 20, "target"));
        midPayload.send(part);
        assertThat(midPayload.closedByServer(10_000)).isTrue();
        transfer(friend, TransferRequest.read(scratch, 0, "target", 0, SIZE));
        ByteBuffer got = scratch.byteBuffer();
        ByteBuffer want = ByteBuffer.wrap(segmentBytes(0, SIZE));
        for (int i = 0; i < SIZE; i++) {
            if (i < 8192 || i >= 8192 + 100) {
                assertThat(got.get(i)).as("byte %d", i).isEqualTo(want.get(i));
            }
        }
    }

    @Test
    void offsetsAndLengthsOutOfRangeOrOverflowingAreRejectedInStep() throws Exception {
        RawPeer p = authenticated(RawPeer.ROLE_PEER);
        long[][] reads = {
            {SIZE - 10, 100}, {Long.MAX_VALUE - 5, 100}, {-1, 10}, {Long.MIN_VALUE, 1}, {SIZE, 1}
        };
        for (long[] r : reads) {
            p.send(p.request(RawPeer.OP_READ, r[0], r[1], "target"));
            assertThat(p.reply().status())
                    .as("read %d+%d", r[0], r[1])
                    .isEqualTo(DataplaneError.OUT_OF_BOUNDS.code());
        }
        // Writes as a remover: a peer's write into a store segment is refused before its range.
        RawPeer w = authenticated(RawPeer.ROLE_REMOVER);
        long[] writeOffsets = {Long.MAX_VALUE, Long.MAX_VALUE - 15, -16, SIZE - 8};
        for (long offset : writeOffsets) {
            w.send(w.request(RawPeer.OP_WRITE, offset, 16, "target"));
            w.send(new byte[16]); // read and dropped: the stream stays in step
            assertThat(w.reply().status())
                    .as("write at %d", offset)
                    .isEqualTo(DataplaneError.OUT_OF_BOUNDS.code());
        }
        p.send(p.request(RawPeer.OP_READ, 0, 16, "no-such-segment"));
        assertThat(p.reply().status()).isEqualTo(DataplaneError.UNKNOWN_SEGMENT.code());
        p.send(p.request(RawPeer.OP_READ, 100, 64, "target")); // still in step
        assertThat(p.reply().status()).isZero();
        assertThat(p.read(64)).isEqualTo(segmentBytes(100, 64));

        for (long length : new long[] {-1, (8L << 20) + 1, Long.MAX_VALUE}) {
            RawPeer bad = authenticated(RawPeer.ROLE_PEER);
            bad.send(bad.request(RawPeer.OP_WRITE, 0, length, "target"));
            assertThat(bad.closedByServer(5000)).as("length %d", length).isTrue();
        }
        RawPeer badOp = authenticated(RawPeer.ROLE_PEER);
        badOp.send(badOp.request(99, 0, 0, "target"));
        assertThat(badOp.closedByServer(5000)).isTrue();
        RawPeer badMagic = authenticated(RawPeer.ROLE_PEER);
        byte[] h = badMagic.request(RawPeer.OP_READ, 0, 16, "target");
        h[0] ^= 1;
        badMagic.send(h);
        assertThat(badMagic.closedByServer(5000)).isTrue();
        assertStillServingAndUnchanged();
    }

    @Test
    void aNonOwnerMayNeitherAllocateNorFreeAndARemoverMayFree() throws Exception {
        long objectOffset = friend.store().locations("obj").get(0).offset();
        long free = Long.parseLong(owner.command("free"));
        RawPeer peer = authenticated(RawPeer.ROLE_PEER);
        peer.send(peer.request(RawPeer.OP_FREE, objectOffset, 0, "target"));
        assertThat(peer.reply().status()).isEqualTo(DataplaneError.DENIED.code());
        peer.send(peer.request(RawPeer.OP_ALLOC, 0, 4096, "target"));
        assertThat(peer.reply().status()).isEqualTo(DataplaneError.DENIED.code());
        RawPeer remover = authenticated(RawPeer.ROLE_REMOVER);
        remover.send(remover.request(RawPeer.OP_ALLOC, 0, 4096, "target"));
        assertThat(remover.reply().status()).isEqualTo(DataplaneError.DENIED.code());
        assertThat(Long.parseLong(owner.command("free"))).isEqualTo(free);
        // Through the API: a reader's remove is refused before the entry is taken.
        assertThatThrownBy(() -> friend.store().remove("obj"))
                .isInstanceOf(PermissionDeniedException.class)
                .hasMessageContaining("obj");
        assertThat(friend.store().exists("obj")).isTrue();
        assertStillServingAndUnchanged();
        // control-api's role frees it, at the owner.
        Dataplane control = open(TestEngines.config("control", scope.prefix()).remover(true));
        assertThat(control.store().remove("obj")).isTrue();
        assertThat(Long.parseLong(owner.command("free"))).isEqualTo(SIZE);
        assertStillServingAndUnchanged();
    }

    /**
     * A remover the owner refuses (here one without the secret, as control-api ran in {@code
     * ./relay bench publish}) must not take the entry and leave the bytes allocated: the owner
     * would keep them for as long as it lives, with no entry left to free them by, and a segment
     * sized for two generations fills up after a few collections. The object stays published and
     * readable, and a remover with the secret frees it.
     */
    @Test
    void aRefusedFreeKeepsTheObjectInsteadOfLeakingItsSpace() throws Exception {
        long free = Long.parseLong(owner.command("free"));
        Dataplane noSecret =
                open(
                        DataplaneConfig.builder("control-no-secret")
                                .keyPrefix(scope.prefix())
                                .remover(true));
        assertThatThrownBy(() -> noSecret.store().remove("obj"))
                .isInstanceOfSatisfying(
                        PermissionDeniedException.class,
                        e -> assertThat(e.subject()).isEqualTo("obj"))
                .hasMessageContaining("target")
                .hasMessageContaining("stays stored");
        assertThat(friend.store().exists("obj")).isTrue();
        assertThat(friend.store().locations("obj")).hasSize(1);
        assertThat(Long.parseLong(owner.command("free"))).isEqualTo(free);
        assertStillServingAndUnchanged();

        Dataplane control = open(TestEngines.config("control", scope.prefix()).remover(true));
        assertThat(control.store().remove("obj")).isTrue();
        assertThat(Long.parseLong(owner.command("free"))).isEqualTo(SIZE);
    }

    @Test
    void moreConnectionsThanTheCapAreRefusedCleanly() throws Exception {
        // The friend's pooled connections are open (it read in setUp) and stay served.
        List<RawPeer> flood = new ArrayList<>();
        RawPeer.Outcome last = RawPeer.Outcome.ACCEPTED;
        for (int i = 0; i < CAP + 4 && last == RawPeer.Outcome.ACCEPTED; i++) {
            RawPeer p = raw();
            flood.add(p);
            last = p.handshake(TestEngines.SECRET, RawPeer.ROLE_PEER);
        }
        assertThat(last).isIn(RawPeer.Outcome.BUSY, RawPeer.Outcome.CLOSED);
        assertThat(flood.size()).isLessThanOrEqualTo(CAP);
        assertThat(flood.get(flood.size() - 1).closedByServer(5000)).isTrue();
        // At the cap, connections already established keep being served.
        RawPeer established = flood.get(0);
        established.send(established.request(RawPeer.OP_READ, 0, 64, "target"));
        assertThat(established.reply().status()).isZero();
        byte[] first = established.read(64);
        for (RawPeer p : flood) {
            p.close();
        }
        // Room again: a new engine connects and reads.
        Dataplane late = open(TestEngines.config("node-late", scope.prefix()));
        RegisteredBuffer dst = late.registerBuffer(ByteBuffer.allocateDirect(4096));
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        for (; ; ) {
            try {
                transfer(late, TransferRequest.read(dst, 0, "target", 0, 4096));
                break;
            } catch (PeerGoneException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100); // the server reaps the closed connections
            }
        }
        byte[] got = new byte[4096];
        dst.byteBuffer().get(got);
        assertThat(got).isEqualTo(segmentBytes(0, 4096));
        assertThat(first).isEqualTo(segmentBytes(0, 64));
        assertStillServingAndUnchanged();
    }

    @Test
    void manySlowHandshakesNeitherHoldSlotsNorKeepAnHonestPeerOut() throws Exception {
        // Three times the cap of strangers, each trickling its hello one byte every 300 ms: never
        // silent for the server's 1 s timeout, never done. Their handshakes have a small cap of
        // their own (the oldest is closed for a newer one) and an absolute deadline.
        byte[] hello = RawPeer.hello(RawPeer.ROLE_PEER, new byte[32]);
        List<RawPeer> slow = new ArrayList<>();
        for (int i = 0; i < 3 * CAP; i++) {
            slow.add(raw());
        }
        java.util.Set<RawPeer> closed = new java.util.HashSet<>();
        long start = System.nanoTime();
        for (int round = 0; round < 12; round++) {
            for (RawPeer p : slow) {
                if (closed.contains(p)) {
                    continue;
                }
                try {
                    p.send(new byte[] {hello[round]});
                    if (p.closedByServer(1)) {
                        closed.add(p);
                    }
                } catch (java.io.IOException e) {
                    closed.add(p);
                }
            }
            if (round == 3) {
                // Meanwhile an engine of the deployment connects and reads the whole segment.
                Dataplane honest = open(TestEngines.config("node-honest", scope.prefix()));
                RegisteredBuffer dst = honest.registerBuffer(ByteBuffer.allocateDirect(SIZE));
                transfer(honest, TransferRequest.read(dst, 0, "target", 0, SIZE));
                assertThat(Patterns.crc(dst.byteBuffer(), 0, SIZE)).isEqualTo(baseline);
            }
            Thread.sleep(300);
        }
        assertThat(closed)
                .as(
                        "trickling handshakes the server closed within %d ms",
                        Duration.ofNanos(System.nanoTime() - start).toMillis())
                .hasSize(slow.size());
        assertStillServingAndUnchanged();
    }

    /** What the segment holds at [offset, offset + length), as the last verified read saw it. */
    private byte[] segmentBytes(int offset, int length) {
        transfer(friend, TransferRequest.read(scratch, 0, "target", 0, SIZE));
        byte[] b = new byte[length];
        scratch.byteBuffer().get(offset, b);
        return b;
    }

    @SuppressWarnings("unused")
    private static byte[] random(int n) {
        byte[] b = new byte[n];
        new SecureRandom().nextBytes(b);
        return b;
    }
}
