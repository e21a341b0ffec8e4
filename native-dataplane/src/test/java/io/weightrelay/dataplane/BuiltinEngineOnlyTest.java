package io.weightrelay.dataplane;

import static io.weightrelay.dataplane.TestEngines.transfer;
import static io.weightrelay.dataplane.TransferRequest.read;
import static io.weightrelay.dataplane.TransferRequest.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What only the built-in engine has, beside the shared {@link EngineConformanceTest} (which {@link
 * BuiltinEngineConformanceTest} runs on it): byte counters per transport by node label (engines
 * with the same label use the local transport between them, engines with different labels tcp),
 * direct buffers as local memory, store segment files and their free bytes, in-place publish,
 * roles, peers in child JVMs. {@link MooncakeEngineOnlyTest} is Mooncake's counterpart.
 *
 * <p>Why each cannot run on Mooncake:
 *
 * <ul>
 *   <li>{@code writesAndReadsBackOverTheTransportOfTheNodeLabels}, {@code
 *       concurrentBatchesLandEachTaskInItsOwnRange}, {@code
 *       oneSourceWrittenToSeveralSegmentsLandsWholeInEach}, {@code
 *       invalidTasksFailAloneWithTheirSpecificError}, {@code
 *       aClosedSegmentIsUnknownAndItsRecreationIsFoundAgain}: they assert the byte counters per
 *       transport by node label (local between engines of one label), where Mooncake counts by
 *       where the bytes are (MooncakeCounters); their reads, writes, failures and re-created
 *       segments run here in {@code
 *       oneSidedWritesAndReadsLandWholeInvalidTasksFailAloneAndARecreatedSegmentIsFound}.
 *   <li>{@code memoryNotRegisteredWithThisEngineIsRefused}, {@code
 *       rangesAtObjectEdgesReadExactlyOrFailAlone}, {@code
 *       objectsLookedUpTogetherReadAsIfLookedUpAloneAndAMissingOneFailsOnlyItsRead}: direct buffers
 *       as local memory (the agent, another process, cannot map them), replica offsets and free
 *       bytes of store segment files ({@code locations}, {@code freeBytes}), reads past an object's
 *       end answered {@code OUT_OF_BOUNDS}; the rest of their bodies runs here as {@code
 *       aStoredObjectReadsBackRangeByRangeAndABadRangeFailsAlone} and {@code
 *       objectsLocatedTogetherReadAsIfLocatedAloneAndAMissingOneFailsOnlyItsRead}.
 *   <li>{@code publishMovesNoTcpBytesAndEveryStoredByteIsReadOnce}: a reader of the publisher's
 *       node label counts local bytes (the built-in engine maps the publisher's segment file);
 *       Mooncake counts by where the replica is, so the shared {@code
 *       publishCountsNoTcpByteAndEveryStoredByteReadCountsOnceAtItsReader} runs here instead.
 *   <li>{@code bytesWrittenInPlaceArePublishedWithoutACopyAndFreedObjectByObject}, {@code
 *       anInPlacePublishIsAllOrNothingAndAlwaysConsumesItsBlock}: in-place publish; Mooncake's put
 *       always copies into a mounted segment.
 *   <li>{@code aFullPreferredSegmentStillYieldsAStoredObjectElsewhere}, {@code
 *       withEveryStoreSegmentFullAPutFailsAndNoReceiveSegmentChanges}, {@code
 *       preferringAReceiveSegmentIsRefusedWithTheSegmentNamed}, {@code
 *       replicasLandInDistinctSegmentsAndReadsFallBackWhenOneIsGone}: store segment files and their
 *       free bytes; Mooncake's capacity is the agents' mounted segments, whose placement the master
 *       decides (the fallback to another mounted segment is tested in the Python agent tests).
 *   <li>{@code oneSidedWritesAndReadsOfAReceiveSegmentWorkWithNotify}: per-transport byte counters
 *       and a receive segment as the source of its owner's writes to another engine's segment
 *       checked through the counters; its notify semantics run here in {@code
 *       writeWithNotifyBumpsTheTargetsCounterAfterTheBytesLanded}.
 *   <li>{@code concurrentPutAndRemoveLeaveNoLeakAndNoTornObject}: it checks free bytes of a store
 *       segment file after the race.
 *   <li>{@code anEngineInAnotherProcessServesReadsPutsAndNotifies}, {@code
 *       aStorerPutsIntoAnotherProcessSegmentWhichItsOwnerAllocates}, {@code
 *       peerDeathMidTransferFailsWithPeerGoneNotAHang}, {@code
 *       checkReadableNamesAMissingObjectAndADeadOwnerBeforeAnythingIsRead}: peers are child JVMs
 *       running the built-in engine ({@link PeerProcess}), and roles (remover, storer) are the
 *       built-in engine's authentication; every Mooncake data plane here already talks to another
 *       process (its agent), and an agent's death is {@link MooncakeAgentTest}'s.
 * </ul>
 */
class BuiltinEngineOnlyTest extends EngineTestSupport {
    private static final int MIB = 1 << 20;

    @Override
    protected TestEngine engine() {
        return BuiltinTestEngine.INSTANCE;
    }

    /**
     * Opens an engine that claims the remover role (what control-api runs): it may free in segments
     * of other engines.
     */
    private Dataplane openRemover(String nodeLabel, String keyPrefix) {
        return Dataplane.open(TestEngines.config(nodeLabel, keyPrefix).remover(true).build());
    }

    /**
     * Opens an engine that claims the storer role (what a client-only publisher runs): owners
     * allocate in their store segments for its puts.
     */
    private Dataplane openStorer(String nodeLabel, String keyPrefix) {
        return Dataplane.open(TestEngines.config(nodeLabel, keyPrefix).storer(true).build());
    }

    /** Starts an engine in another process that owns one segment. */
    private PeerProcess startPeer(String nodeLabel, String keyPrefix, String segment, long size)
            throws IOException {
        return PeerProcess.start(RedisSupport.URI, keyPrefix, nodeLabel, segment, size);
    }

    private Dataplane remover(String label) {
        Dataplane dp = openRemover(label, scope.prefix());
        scope.closeAfter(dp);
        return dp;
    }

    private Dataplane storer(String label) {
        Dataplane dp = openStorer(label, scope.prefix());
        scope.closeAfter(dp);
        return dp;
    }

    private PeerProcess peer(String label, String segment, long size) throws IOException {
        PeerProcess p = startPeer(label, scope.prefix(), segment, size);
        scope.closeAfter(p);
        return p;
    }

    /**
     * Writes the first {@code length} bytes of {@code source} (filled with {@code seed}'s pattern)
     * to the start of {@code target} through {@code from}'s engine, and checks the segment holds
     * them.
     */
    private static void assertWritten(
            Dataplane from, LocalMemory source, Segment target, int length, int seed) {
        transfer(from, write(source, 0, target.name(), 0, length));
        Patterns.assertHolds(target.byteBuffer(), 0, length, seed);
    }

    /** What each of the threads of {@link #concurrently} runs, given its index. */
    private interface PerThread {
        void run(int thread) throws Exception;
    }

    /** Runs {@code body} on {@code threads} threads at once; the first failure fails the test. */
    private static void concurrently(int threads, PerThread body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int th = 0; th < threads; th++) {
                int thread = th;
                futures.add(
                        pool.submit(
                                () -> {
                                    body.run(thread);
                                    return null;
                                }));
            }
            for (Future<?> f : futures) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static RegisteredBuffer buffer(Dataplane dp, int size, int seed) {
        RegisteredBuffer b = dp.registerBuffer(ByteBuffer.allocateDirect(size));
        Patterns.fill(b.byteBuffer(), 0, size, seed);
        return b;
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void writesAndReadsBackOverTheTransportOfTheNodeLabels(Transport t) {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int size = 16 * MIB + 7;
        Segment target = b.createReceiveSegment("target", size);
        RegisteredBuffer source = buffer(a, size, 3);
        RegisteredBuffer back = a.registerBuffer(ByteBuffer.allocateDirect(size));
        Counters before = a.counters();

        assertWritten(a, source, target, size, 3);
        transfer(a, read(back, 0, "target", 0, size));

        assertThat(back.byteBuffer()).isEqualTo(source.byteBuffer());
        assertTransport(a.counters().minus(before), t, size, size);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void concurrentBatchesLandEachTaskInItsOwnRange(Transport t) throws Exception {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int threads = 4;
        int batches = 6;
        int tasks = 4;
        int slot = 256 * 1024 + 64;
        Segment target = b.createReceiveSegment("target", (long) threads * batches * tasks * slot);
        concurrently(
                threads,
                thread -> {
                    RegisteredBuffer src = buffer(a, tasks * slot, thread + 11);
                    for (int bt = 0; bt < batches; bt++) {
                        List<TransferRequest> reqs = new ArrayList<>();
                        for (int k = 0; k < tasks; k++) {
                            long dst = ((long) (thread * batches + bt) * tasks + k) * slot;
                            reqs.add(write(src, (long) k * slot, "target", dst, slot));
                        }
                        try (TransferBatch batch = a.engine().submit(reqs)) {
                            batch.awaitSuccess(WAIT);
                            assertThat(batch.statuses())
                                    .allSatisfy(
                                            s -> assertThat(s.bytesTransferred()).isEqualTo(slot));
                        }
                    }
                    src.close();
                });
        ByteBuffer landed = target.byteBuffer();
        for (int th = 0; th < threads; th++) {
            ByteBuffer expected = ByteBuffer.allocate(tasks * slot);
            Patterns.fill(expected, 0, tasks * slot, th + 11);
            for (int bt = 0; bt < batches; bt++) {
                int base = (th * batches + bt) * tasks * slot;
                assertThat(landed.duplicate().position(base).limit(base + tasks * slot))
                        .isEqualTo(expected.duplicate().clear());
            }
        }
    }

    /**
     * The same source bytes written to several segments in one batch (a tensor to every worker of a
     * node) land whole in each, beside a write of part of them and one that fails alone; the local
     * transport copies such tasks together, block by block.
     */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void oneSourceWrittenToSeveralSegmentsLandsWholeInEach(Transport t) {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int size = 9 * MIB + 4099;
        int targets = 3;
        List<Segment> segments = new ArrayList<>();
        for (int k = 0; k < targets; k++) {
            segments.add(b.createReceiveSegment("copy-" + k, size + 64));
        }
        RegisteredBuffer src = buffer(a, size, 5);
        List<TransferRequest> reqs = new ArrayList<>();
        for (int k = 0; k < targets; k++) {
            reqs.add(write(src, 0, "copy-" + k, 64, size));
        }
        reqs.add(write(src, 0, "copy-0", 128, size)); // out of bounds, same source and length
        reqs.add(write(src, 0, "copy-1", 0, 64)); // a prefix of the same source
        Counters before = a.counters();
        try (TransferBatch batch = a.engine().submit(reqs)) {
            assertThat(batch.await(WAIT)).isTrue();
            List<TaskStatus> s = batch.statuses();
            for (int k = 0; k < targets; k++) {
                assertThat(s.get(k).state()).isEqualTo(TaskStatus.State.COMPLETED);
                assertThat(s.get(k).bytesTransferred()).isEqualTo(size);
            }
            assertThat(s.get(targets).error()).isEqualTo(DataplaneError.OUT_OF_BOUNDS);
            assertThat(s.get(targets + 1).bytesTransferred()).isEqualTo(64);
        }
        for (int k = 0; k < targets; k++) {
            Patterns.assertHolds(segments.get(k).byteBuffer(), 64, size, 5);
        }
        Patterns.assertHolds(segments.get(1).byteBuffer(), 0, 64, 5);
        assertTransport(a.counters().minus(before), t, 0, (long) targets * size + 64);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void invalidTasksFailAloneWithTheirSpecificError(Transport t) {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int size = MIB;
        b.createReceiveSegment("target", size);
        RegisteredBuffer src = buffer(a, size, 1);
        try (TransferBatch batch =
                a.engine()
                        .submit(
                                List.of(
                                        write(src, 0, "target", 0, 1024),
                                        write(src, 0, "target", size - 10, 20),
                                        write(src, size - 10, "target", 0, 20),
                                        write(src, 0, "no-such-segment", 0, 10),
                                        read(src, 0, "target", size, 0)))) {
            assertThat(batch.await(WAIT)).isTrue();
            List<TaskStatus> s = batch.statuses();
            assertThat(s.get(0).state()).isEqualTo(TaskStatus.State.COMPLETED);
            assertThat(s.get(1).error()).isEqualTo(DataplaneError.OUT_OF_BOUNDS);
            assertThat(s.get(2).error()).isEqualTo(DataplaneError.OUT_OF_BOUNDS);
            assertThat(s.get(3).error()).isEqualTo(DataplaneError.UNKNOWN_SEGMENT);
            assertThat(s.get(4).state()).isEqualTo(TaskStatus.State.COMPLETED);
            assertThat(batch.failure(s.get(1))).hasMessageContaining("segment 'target'");
            assertThat(batch.failure(s.get(2))).hasMessageContaining("registered buffer");
            assertThat(batch.failure(s.get(3)))
                    .isInstanceOfSatisfying(
                            UnknownSegmentException.class,
                            e -> assertThat(e.segment()).isEqualTo("no-such-segment"));
            assertThatThrownBy(() -> batch.awaitSuccess(WAIT))
                    .isInstanceOf(OutOfBoundsException.class);
        }
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void aClosedSegmentIsUnknownAndItsRecreationIsFoundAgain(Transport t) {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        RegisteredBuffer src = buffer(a, MIB, 14);
        Segment first = b.createReceiveSegment("recycled", MIB);
        transfer(a, write(src, 0, "recycled", 0, MIB));
        first.close();

        assertThatThrownBy(() -> transfer(a, write(src, 0, "recycled", 0, 64)))
                .isInstanceOfSatisfying(
                        UnknownSegmentException.class,
                        e -> assertThat(e.segment()).isEqualTo("recycled"));

        Segment second = b.createReceiveSegment("recycled", MIB);
        assertWritten(a, src, second, MIB, 14);
    }

    /**
     * A checksummed batch that writes the same source bytes to several destinations on this node (a
     * fan-out to a node's workers) reads the source once for all of them: every write lands whole,
     * and each carries the CRC32C of what was sent, as a write of its own would.
     */
    @Test
    void checksummedWritesOfOneSourceToSeveralTargetsEachLandAndEachCarryItsChecksum() {
        Dataplane a = dp("node-a");
        int size = 11 * MIB + 5;
        Segment one = a.createReceiveSegment("fan-1", size);
        Segment two = a.createReceiveSegment("fan-2", size);
        Segment three = a.createReceiveSegment("fan-3", size + 64);
        LocalMemory source = filled(a, "fan-src", size, 9);
        ByteBuffer sent = view(source);
        try (TransferBatch batch =
                a.engine()
                        .submitChecksummed(
                                List.of(
                                        write(source, 0, "fan-1", 0, size),
                                        write(source, 0, "fan-2", 0, size),
                                        write(source, 0, "fan-3", 64, size),
                                        write(source, 64, "fan-3", 0, 64)))) {
            batch.awaitSuccess(WAIT);
            for (int i = 0; i < 3; i++) {
                assertThat(batch.crc32c(i)).as("write %d", i).isEqualTo(crc32c(sent, 0, size));
            }
            assertThat(batch.crc32c(3)).isEqualTo(crc32c(sent, 64, 64));
        }
        assertThat(crc32c(one.byteBuffer(), 0, size)).isEqualTo(crc32c(sent, 0, size));
        assertThat(crc32c(two.byteBuffer(), 0, size)).isEqualTo(crc32c(sent, 0, size));
        assertThat(crc32c(three.byteBuffer(), 64, size)).isEqualTo(crc32c(sent, 0, size));
        assertThat(crc32c(three.byteBuffer(), 0, 64)).isEqualTo(crc32c(sent, 64, 64));
    }

    /** A segment's bytes copied out into another mapping: exactly the range, or a named error. */
    @Test
    void aRangeCopiedOutOfASegmentLandsExactlyAndABadOneIsRefusedByName() {
        Dataplane a = dp("node-a");
        Segment own = a.createReceiveSegment("copy-out", MIB);
        ByteBuffer view = own.byteBuffer();
        for (int i = 0; i < MIB; i++) {
            view.put(i, (byte) (i * 31));
        }
        ByteBuffer target = ByteBuffer.allocateDirect(4096 + 8);
        target.position(8);

        own.copyOut(MIB - 4096, target);

        assertThat(target.position()).isEqualTo(4096 + 8);
        for (int i = 0; i < 4096; i++) {
            assertThat(target.get(8 + i)).isEqualTo((byte) ((MIB - 4096 + i) * 31));
        }
        assertThat(target.get(0)).as("before the target's position").isZero();
        assertThatThrownBy(() -> own.copyOut(MIB - 10, ByteBuffer.allocateDirect(20)))
                .isInstanceOf(OutOfBoundsException.class)
                .hasMessageContaining("copy-out");
        assertThatThrownBy(() -> own.copyOut(0, ByteBuffer.allocate(20)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("direct buffer");
        a.close();
        assertThatThrownBy(() -> own.copyOut(0, ByteBuffer.allocateDirect(20)))
                .isInstanceOf(DataplaneClosedException.class);
    }

    @Test
    void memoryNotRegisteredWithThisEngineIsRefused() {
        Dataplane a = dp("node-a");
        Dataplane b = dp("node-b");
        b.createSegment("target", MIB);
        Segment foreign = b.createSegment("foreign", MIB);
        RegisteredBuffer closed = buffer(a, MIB, 2);
        closed.close();
        closed.close(); // idempotent

        assertThatThrownBy(() -> transfer(a, write(closed, 0, "target", 0, 64)))
                .isInstanceOf(UnregisteredBufferException.class);
        assertThatThrownBy(() -> transfer(a, read(foreign, 0, "target", 0, 64)))
                .isInstanceOf(UnregisteredBufferException.class)
                .hasMessageContaining("foreign");
    }

    @Test
    void rangesAtObjectEdgesReadExactlyOrFailAlone() {
        Dataplane a = dp("node-a");
        Segment own = a.createSegment("pub", 4 * MIB);
        int size = MIB + 13;
        RegisteredBuffer src = buffer(a, size, 4);
        a.store().putFrom("m/1/w", src, 0, size, ReplicateConfig.preferLocal("pub"));
        RegisteredBuffer dst = a.registerBuffer(ByteBuffer.allocateDirect(2 * size));

        long[] r =
                a.store()
                        .getIntoRanges(
                                "m/1/w",
                                List.of(
                                        new ReadRange(0, 1, dst, 0),
                                        new ReadRange(size - 1, 1, dst, 1),
                                        new ReadRange(size, 0, dst, 2),
                                        new ReadRange(size - 5, 10, dst, 3),
                                        new ReadRange(0, size, dst, size),
                                        new ReadRange(-1, 2, dst, 0),
                                        new ReadRange(0, 10, dst, 2L * size - 5)));

        assertThat(r)
                .containsExactly(
                        1,
                        1,
                        0,
                        DataplaneError.OUT_OF_BOUNDS.code(),
                        size,
                        DataplaneError.OUT_OF_BOUNDS.code(),
                        DataplaneError.OUT_OF_BOUNDS.code());
        ByteBuffer got = dst.byteBuffer();
        assertThat(got.get(0)).isEqualTo(Patterns.at(0, 4));
        assertThat(got.get(1)).isEqualTo(Patterns.at(size - 1, 4));
        Patterns.assertHolds(got, size, size, 4);
        assertThat(a.store().exists("m/1/w")).isTrue();
        assertThat(a.store().locations("m/1/w"))
                .singleElement()
                .satisfies(
                        l -> {
                            assertThat(l.segment()).isEqualTo("pub");
                            assertThat(l.nodeLabel()).isEqualTo("node-a");
                            assertThat(l.size()).isEqualTo(size);
                        });
        assertThatThrownBy(
                        () ->
                                a.store()
                                        .putFrom(
                                                "m/1/w",
                                                src,
                                                0,
                                                size,
                                                ReplicateConfig.preferLocal("pub")))
                .isInstanceOfSatisfying(
                        ObjectExistsException.class, e -> assertThat(e.key()).isEqualTo("m/1/w"));

        assertThat(a.store().remove("m/1/w")).isTrue();
        assertThat(a.store().remove("m/1/w")).isFalse();
        assertThat(a.store().exists("m/1/w")).isFalse();
        assertThat(own.freeBytes()).isEqualTo(4 * MIB);
        assertThatThrownBy(() -> a.store().getIntoRanges("m/1/w", List.of()))
                .isInstanceOfSatisfying(
                        ObjectNotFoundException.class, e -> assertThat(e.key()).isEqualTo("m/1/w"));
    }

    @Test
    void objectsLookedUpTogetherReadAsIfLookedUpAloneAndAMissingOneFailsOnlyItsRead() {
        Dataplane a = dp("node-a");
        a.createSegment("pub", 4 * MIB);
        Dataplane reader = dp("node-b");
        int size = 64 * 1024 + 7;
        RegisteredBuffer src = buffer(a, size, 9);
        a.store().putFrom("m/1/x", src, 0, size, ReplicateConfig.preferLocal("pub"));
        a.store().putFrom("m/1/y", src, 0, size, ReplicateConfig.preferLocal("pub"));
        RegisteredBuffer dst = reader.registerBuffer(ByteBuffer.allocateDirect(2 * size));

        List<StoreClient.Located> located =
                reader.store().locate(List.of("m/1/x", "m/1/missing", "m/1/y"));

        assertThat(located)
                .extracting(StoreClient.Located::key)
                .containsExactly("m/1/x", "m/1/missing", "m/1/y");
        StoreClient.ChecksummedReads x =
                reader.store()
                        .getIntoRangesChecksummed(
                                located.get(0), List.of(new ReadRange(0, size, dst, 0)));
        long[] y =
                reader.store()
                        .getIntoRanges(located.get(2), List.of(new ReadRange(0, size, dst, size)));
        assertThat(x.bytes()).containsExactly(size);
        assertThat(y).containsExactly(size);
        Patterns.assertHolds(dst.byteBuffer(), 0, size, 9);
        Patterns.assertHolds(dst.byteBuffer(), size, size, 9);
        assertThat(x.crc32c()[0])
                .isEqualTo(
                        reader.store()
                                .getIntoRangesChecksummed(
                                        "m/1/x", List.of(new ReadRange(0, size, dst, 0)))
                                .crc32c()[0]);
        assertThatThrownBy(
                        () ->
                                reader.store()
                                        .getIntoRanges(
                                                located.get(1),
                                                List.of(new ReadRange(0, 1, dst, 0))))
                .isInstanceOfSatisfying(
                        ObjectNotFoundException.class,
                        e -> assertThat(e.key()).isEqualTo("m/1/missing"));
        assertThat(reader.store().locate(List.of())).isEmpty();
    }

    @Test
    void publishMovesNoTcpBytesAndEveryStoredByteIsReadOnce() {
        Dataplane publisher = dp("node-a");
        Dataplane remoteReader = dp("node-b");
        Dataplane localReader = dp("node-a");
        publisher.createSegment("pub", 8 * MIB);
        int size = 6 * MIB + 100;
        RegisteredBuffer staging = buffer(publisher, size, 6);
        Counters before = publisher.counters();

        publisher.store().putFrom("m/2/w", staging, 0, size, ReplicateConfig.preferLocal("pub"));

        Counters put = publisher.counters().minus(before);
        assertThat(put.tcpTotal()).isZero();
        assertThat(put.localWritten()).isEqualTo(size);
        int half = size / 2;
        RegisteredBuffer farDst = remoteReader.registerBuffer(ByteBuffer.allocateDirect(half));
        RegisteredBuffer nearDst =
                localReader.registerBuffer(ByteBuffer.allocateDirect(size - half));
        Counters far0 = remoteReader.counters();
        Counters near0 = localReader.counters();
        assertThat(
                        remoteReader
                                .store()
                                .getIntoRanges("m/2/w", List.of(new ReadRange(0, half, farDst, 0))))
                .containsExactly(half);
        assertThat(
                        localReader
                                .store()
                                .getIntoRanges(
                                        "m/2/w",
                                        List.of(new ReadRange(half, size - half, nearDst, 0))))
                .containsExactly(size - half);
        Counters far = remoteReader.counters().minus(far0);
        Counters near = localReader.counters().minus(near0);
        assertThat(far.tcpRead()).isEqualTo(half);
        assertThat(near.localRead()).isEqualTo(size - half);
        assertThat(far.totalRead() + near.totalRead()).isEqualTo(size);
        ByteBuffer all = ByteBuffer.allocate(size);
        all.put(farDst.byteBuffer()).put(nearDst.byteBuffer());
        Patterns.assertHolds(all, 0, size, 6);
    }

    @Test
    void bytesWrittenInPlaceArePublishedWithoutACopyAndFreedObjectByObject() {
        Dataplane publisher = dp("node-a");
        Dataplane remoteReader = dp("node-b");
        Segment own = publisher.createSegment("inplace", 4 * MIB);
        long block = publisher.store().reserve(own, 3 * MIB);
        assertThat(own.freeBytes()).isEqualTo(MIB);
        // Three objects at unaligned places of the block, written straight into the segment.
        List<InPlaceObject> objects =
                List.of(
                        new InPlaceObject("m/3/b", block + MIB + 7, MIB - 100),
                        new InPlaceObject("m/3/a", block + 10, 1000),
                        new InPlaceObject("m/3/c", block + 2 * MIB + 64, 4096));
        for (int i = 0; i < objects.size(); i++) {
            InPlaceObject o = objects.get(i);
            Patterns.fill(own.byteBuffer(o.offset(), (int) o.size()), 0, (int) o.size(), 40 + i);
        }
        Counters before = publisher.counters();

        publisher.store().publishInPlace(own, block, objects, true);

        Counters moved = publisher.counters().minus(before);
        assertThat(moved.localWritten() + moved.tcpTotal()).isZero();
        long held = own.size() - own.freeBytes();
        assertThat(held).isBetween(MIB - 100 + 1000 + 4096L, MIB - 100 + 1000 + 4096L + 6 * 64);
        for (int i = 0; i < objects.size(); i++) {
            InPlaceObject o = objects.get(i);
            assertThat(remoteReader.store().locations(o.key()))
                    .singleElement()
                    .satisfies(l -> assertThat(l.offset()).isEqualTo(o.offset()));
            RegisteredBuffer dst =
                    remoteReader.registerBuffer(ByteBuffer.allocateDirect((int) o.size()));
            assertThat(
                            remoteReader
                                    .store()
                                    .getIntoRanges(
                                            o.key(), List.of(new ReadRange(0, o.size(), dst, 0))))
                    .containsExactly(o.size());
            assertThat(Patterns.crc(dst.byteBuffer(), 0, (int) o.size()))
                    .as(o.key())
                    .isEqualTo(Patterns.expectedCrc((int) o.size(), 40 + i));
        }
        // A reader may not free the publisher's space; control-api (a remover) may.
        assertThatThrownBy(() -> remoteReader.store().remove("m/3/a"))
                .isInstanceOf(PermissionDeniedException.class)
                .hasMessageContaining("inplace");
        assertThat(remoteReader.store().exists("m/3/a")).isTrue();
        Dataplane control = remover("control");
        for (InPlaceObject o : objects) {
            assertThat(control.store().remove(o.key())).isTrue();
        }
        assertThat(own.freeBytes()).isEqualTo(4 * MIB);
        // Nothing fragmented: the whole segment is one hole again.
        publisher.store().releaseReservation(own, publisher.store().reserve(own, 4 * MIB));
    }

    @Test
    void anInPlacePublishIsAllOrNothingAndAlwaysConsumesItsBlock() {
        Dataplane a = dp("node-a");
        Segment own = a.createSegment("inplace-fail", 2 * MIB);
        Segment recv = a.createReceiveSegment("inplace-recv", MIB);
        RegisteredBuffer src = buffer(a, 4096, 41);
        a.store().putFrom("m/4/taken", src, 0, 4096, ReplicateConfig.preferLocal(own.name()));
        long used = own.size() - own.freeBytes();

        long block = a.store().reserve(own, MIB);
        List<InPlaceObject> clash =
                List.of(
                        new InPlaceObject("m/4/new", block, 4096),
                        new InPlaceObject("m/4/taken", block + 8192, 4096));
        assertThatThrownBy(() -> a.store().publishInPlace(own, block, clash, true))
                .isInstanceOfSatisfying(
                        ObjectExistsException.class,
                        e -> assertThat(e.key()).isEqualTo("m/4/taken"));
        assertThat(a.store().exists("m/4/new")).isFalse();
        assertThat(own.size() - own.freeBytes()).isEqualTo(used);

        long second = a.store().reserve(own, MIB);
        List<InPlaceObject> overlapping =
                List.of(
                        new InPlaceObject("m/4/x", second, 4096),
                        new InPlaceObject("m/4/y", second + 4000, 4096));
        assertThatThrownBy(() -> a.store().publishInPlace(own, second, overlapping, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inplace-fail");
        List<InPlaceObject> outside = List.of(new InPlaceObject("m/4/z", second, MIB + 64));
        long third = a.store().reserve(own, MIB);
        assertThatThrownBy(() -> a.store().publishInPlace(own, third, outside, true))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(a.store().exists("m/4/x")).isFalse();
        assertThat(own.size() - own.freeBytes()).isEqualTo(used);

        assertThatThrownBy(() -> a.store().reserve(own, 2 * MIB))
                .isInstanceOf(SegmentFullException.class);
        // The other end: the top of the highest hole; freed, the room is whole again.
        long top = a.store().reserve(own, MIB / 2, StoreClient.End.HIGH);
        assertThat(top).isEqualTo(own.size() - MIB / 2);
        assertThat(a.store().reserve(own, MIB / 4, StoreClient.End.LOW)).isLessThan(top);
        assertThatThrownBy(() -> a.store().reserve(own, MIB + MIB / 2, StoreClient.End.HIGH))
                .isInstanceOf(SegmentFullException.class);
        assertThatThrownBy(() -> a.store().reserve(recv, 4096))
                .isInstanceOfSatisfying(
                        SegmentNotAllocatableException.class,
                        e -> assertThat(e.segment()).isEqualTo("inplace-recv"));
        Dataplane other = dp("node-a");
        assertThatThrownBy(() -> other.store().reserve(own, 4096))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inplace-fail");
    }

    @Test
    void aFullPreferredSegmentStillYieldsAStoredObjectElsewhere() {
        Dataplane a = dp("node-a");
        Dataplane b = dp("node-b");
        Segment small = a.createSegment("small", MIB);
        a.createSegment("big", 8 * MIB);
        Segment far = b.createSegment("far", 8 * MIB); // another engine's: never allocated in
        int size = 768 * 1024;
        RegisteredBuffer src = buffer(a, 16 * MIB, 8);

        a.store().putFrom("k/1", src, 0, size, ReplicateConfig.preferLocal("small"));
        a.store().putFrom("k/2", src, 0, size, ReplicateConfig.preferLocal("small"));
        a.store().putFrom("k/3", src, 0, size, ReplicateConfig.preferLocal("missing"));

        assertThat(a.store().locations("k/1").get(0).segment()).isEqualTo("small");
        assertThat(a.store().locations("k/2").get(0).segment()).isEqualTo("big");
        assertThat(a.store().locations("k/3").get(0).segment()).isEqualTo("big");
        RegisteredBuffer dst = a.registerBuffer(ByteBuffer.allocateDirect(size));
        assertThat(a.store().getIntoRanges("k/2", List.of(new ReadRange(0, size, dst, 0))))
                .containsExactly(size);
        Patterns.assertHolds(dst.byteBuffer(), 0, size, 8);
        assertThatThrownBy(
                        () ->
                                a.store()
                                        .putFrom(
                                                "k/huge",
                                                src,
                                                0,
                                                16 * MIB,
                                                ReplicateConfig.preferLocal("small")))
                .isInstanceOf(SegmentFullException.class)
                .hasMessageContaining("k/huge");
        assertThat(a.store().exists("k/huge")).isFalse();
        assertThat(small.freeBytes()).isEqualTo(MIB - size);
        // Preferring another engine's segment is a preference the owner rule overrides.
        a.store().putFrom("k/far", src, 0, size, new ReplicateConfig(1, List.of("far"), true));
        assertThat(a.store().locations("k/far").get(0).segment()).isEqualTo("big");
        assertThat(far.freeBytes()).isEqualTo(8 * MIB);
    }

    @Test
    void withEveryStoreSegmentFullAPutFailsAndNoReceiveSegmentChanges() {
        Dataplane a = dp("node-a");
        Dataplane near = dp("node-a"); // another engine on a's node: local transport
        Dataplane far = dp("node-b"); // another node: tcp
        Segment store = a.createSegment("store-a", MIB);
        List<Segment> receive =
                List.of(
                        a.createReceiveSegment("recv-own", 4 * MIB),
                        near.createReceiveSegment("recv-near", 4 * MIB),
                        far.createReceiveSegment("recv-far", 4 * MIB));
        for (int i = 0; i < receive.size(); i++) {
            Segment r = receive.get(i);
            assertThat(r.kind()).isEqualTo(SegmentKind.RECEIVE);
            assertThat(r.freeBytes()).isZero();
            Patterns.fill(r.byteBuffer(), 0, 4 * MIB, 30 + i);
        }
        assertThat(store.kind()).isEqualTo(SegmentKind.STORE);
        int size = 768 * 1024;
        RegisteredBuffer src = buffer(a, size, 31);
        a.store().putFrom("full/1", src, 0, size, ReplicateConfig.preferLocal("store-a"));

        // The preferred store segment is full: the fallback must not reach a receive segment,
        // whatever its transport and free space, with a preference or without one.
        assertThatThrownBy(
                        () ->
                                a.store()
                                        .putFrom(
                                                "full/2",
                                                src,
                                                0,
                                                size,
                                                ReplicateConfig.preferLocal("store-a")))
                .isInstanceOf(SegmentFullException.class)
                .hasMessageContaining("full/2")
                .hasMessageNotContaining("recv-"); // never even asked
        RegisteredBuffer nearSrc = buffer(near, size, 35);
        assertThatThrownBy(
                        () ->
                                near.store()
                                        .putFrom(
                                                "full/3",
                                                nearSrc,
                                                0,
                                                size,
                                                new ReplicateConfig(1, List.of(), true)))
                .isInstanceOf(SegmentFullException.class)
                .hasMessageContaining("full/3");
        RegisteredBuffer farSrc = buffer(far, size, 32);
        assertThatThrownBy(
                        () ->
                                far.store()
                                        .putFrom(
                                                "full/4",
                                                farSrc,
                                                0,
                                                size,
                                                new ReplicateConfig(1, List.of(), true)))
                .isInstanceOf(SegmentFullException.class)
                .hasMessageContaining("full/4");

        assertThat(a.store().exists("full/2")).isFalse();
        assertThat(near.store().exists("full/3")).isFalse();
        assertThat(far.store().exists("full/4")).isFalse();
        assertThat(a.store().locations("full/1"))
                .extracting(ObjectLocation::segment)
                .containsExactly("store-a");
        for (int i = 0; i < receive.size(); i++) {
            assertThat(Patterns.crc(receive.get(i).byteBuffer(), 0, 4 * MIB))
                    .as(receive.get(i).name())
                    .isEqualTo(Patterns.expectedCrc(4 * MIB, 30 + i));
        }
        // Once the store segment has room again, its owner's put lands there (only the owner
        // allocates in it).
        assertThat(a.store().remove("full/1")).isTrue();
        a.store().putFrom("full/4", src, 0, size, new ReplicateConfig(1, List.of(), true));
        assertThat(a.store().locations("full/4").get(0).segment()).isEqualTo("store-a");
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void oneSidedWritesAndReadsOfAReceiveSegmentWorkWithNotify(Transport t) throws Exception {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int size = 3 * MIB + 5;
        Segment target = b.createReceiveSegment("recv-buffer", size);
        RegisteredBuffer src = buffer(a, size, 33);
        b.engine().registerNotify("g3/recv");
        CompletableFuture<Long> waiter =
                CompletableFuture.supplyAsync(() -> b.engine().awaitNotify("g3/recv", 1, WAIT));
        Counters before = a.counters();

        try (TransferBatch batch =
                a.engine()
                        .submitWithNotify(
                                List.of(
                                        write(src, 0, "recv-buffer", 0, MIB),
                                        write(src, MIB, "recv-buffer", MIB, size - MIB)),
                                "g3/recv")) {
            batch.awaitSuccess(WAIT);
        }

        assertThat(waiter.get(60, TimeUnit.SECONDS)).isEqualTo(1);
        Patterns.assertHolds(target.byteBuffer(), 0, size, 33);
        RegisteredBuffer back = a.registerBuffer(ByteBuffer.allocateDirect(size));
        transfer(a, read(back, 0, "recv-buffer", 0, size));
        Patterns.assertHolds(back.byteBuffer(), 0, size, 33);
        assertTransport(a.counters().minus(before), t, size, size);
        // The owner uses it as local memory too: a source for its own writes.
        Segment other = a.createReceiveSegment("recv-a", 4 * MIB);
        assertWritten(b, target, other, MIB, 33);
    }

    @Test
    void preferringAReceiveSegmentIsRefusedWithTheSegmentNamed() {
        Dataplane a = dp("node-a");
        Dataplane b = dp("node-b");
        Segment store = a.createSegment("store-a", 4 * MIB);
        a.createReceiveSegment("recv-own", MIB);
        b.createReceiveSegment("recv-remote", MIB);
        RegisteredBuffer src = buffer(a, MIB, 34);

        for (String receive : List.of("recv-own", "recv-remote")) {
            assertThatThrownBy(
                            () ->
                                    a.store()
                                            .putFrom(
                                                    "pref/" + receive,
                                                    src,
                                                    0,
                                                    4096,
                                                    new ReplicateConfig(
                                                            1, List.of("store-a", receive), true)))
                    .isInstanceOfSatisfying(
                            SegmentNotAllocatableException.class,
                            e -> assertThat(e.segment()).isEqualTo(receive))
                    .hasMessageContaining("'" + receive + "'")
                    .hasMessageContaining("pref/" + receive);
            assertThat(a.store().exists("pref/" + receive)).isFalse();
        }
        assertThat(store.freeBytes()).isEqualTo(4 * MIB);
        a.store().putFrom("pref/ok", src, 0, 4096, ReplicateConfig.preferLocal("store-a"));
        assertThat(a.store().locations("pref/ok").get(0).segment()).isEqualTo("store-a");
    }

    @Test
    void replicasLandInDistinctSegmentsAndReadsFallBackWhenOneIsGone() {
        Dataplane a = dp("node-a");
        Dataplane b = dp("node-b");
        Segment near = a.createSegment("near", 2 * MIB);
        a.createSegment("second", 2 * MIB);
        Segment far = b.createSegment("far", 2 * MIB); // b's: a never allocates in it
        int size = MIB;
        RegisteredBuffer src = buffer(a, size, 12);
        a.store().putFrom("r/1", src, 0, size, new ReplicateConfig(2, List.of("near"), true));

        assertThat(a.store().locations("r/1"))
                .extracting(ObjectLocation::segment)
                .containsExactly("near", "second");
        assertThat(far.freeBytes()).isEqualTo(2 * MIB);
        near.close();
        RegisteredBuffer dst = a.registerBuffer(ByteBuffer.allocateDirect(size));
        assertThat(a.store().getIntoRanges("r/1", List.of(new ReadRange(0, size, dst, 0))))
                .containsExactly(size);
        Patterns.assertHolds(dst.byteBuffer(), 0, size, 12);
    }

    @Test
    void concurrentPutAndRemoveLeaveNoLeakAndNoTornObject() throws Exception {
        Dataplane a = dp("node-a");
        Segment seg = a.createSegment("pub", 8 * MIB);
        int threads = 4;
        int rounds = 25;
        AtomicInteger sharedWins = new AtomicInteger();
        concurrently(
                threads,
                thread -> {
                    RegisteredBuffer src = buffer(a, 64 * 1024, thread);
                    RegisteredBuffer dst = a.registerBuffer(ByteBuffer.allocateDirect(64 * 1024));
                    for (int i = 0; i < rounds; i++) {
                        int size = 1 + (i * 4099 + thread * 37) % (64 * 1024);
                        String key = "c/" + thread + "/" + i;
                        a.store().putFrom(key, src, 0, size, ReplicateConfig.preferLocal("pub"));
                        assertThat(
                                        a.store()
                                                .getIntoRanges(
                                                        key,
                                                        List.of(new ReadRange(0, size, dst, 0))))
                                .containsExactly(size);
                        Patterns.assertHolds(dst.byteBuffer(), 0, size, thread);
                        assertThat(a.store().remove(key)).isTrue();
                        try {
                            a.store()
                                    .putFrom(
                                            "c/shared",
                                            src,
                                            0,
                                            1000,
                                            ReplicateConfig.preferLocal("pub"));
                            sharedWins.incrementAndGet();
                        } catch (ObjectExistsException expected) {
                            // another thread published it first
                        }
                        a.store().remove("c/shared");
                    }
                });
        assertThat(sharedWins.get()).isPositive();
        assertThat(a.store().exists("c/shared")).isFalse();
        assertThat(seg.freeBytes()).isEqualTo(8 * MIB);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void anEngineInAnotherProcessServesReadsPutsAndNotifies(Transport t) throws Exception {
        Dataplane a = dp("node-a");
        long segSize = 16 * MIB;
        PeerProcess peer = peer(peerLabel(t), "child", segSize);
        int size = 3 * MIB + 3;
        peer.command("put child/obj " + size + " 5");
        RegisteredBuffer dst = a.registerBuffer(ByteBuffer.allocateDirect(size));
        Counters before = a.counters();

        assertThat(a.store().getIntoRanges("child/obj", List.of(new ReadRange(0, size, dst, 0))))
                .containsExactly(size);
        Patterns.assertHolds(dst.byteBuffer(), 0, size, 5);
        assertTransport(a.counters().minus(before), t, size, 0);

        // A remote put is refused: only the owner allocates in its segment.
        long freeBefore = Long.parseLong(peer.command("free"));
        RegisteredBuffer src = buffer(a, MIB, 21);
        assertThatThrownBy(
                        () ->
                                a.store()
                                        .putFrom(
                                                "parent/obj",
                                                src,
                                                0,
                                                MIB,
                                                ReplicateConfig.preferLocal("child")))
                .isInstanceOf(SegmentFullException.class)
                .hasMessageContaining("child");
        assertThat(Long.parseLong(peer.command("free"))).isEqualTo(freeBefore);

        // A write with notify into the child's segment; the child waits on its counter. It is
        // store capacity, so the writer is a remover: over tcp a peer's write there is refused.
        long offset = 12L * MIB;
        peer.command("register fanout");
        CompletableFuture<String> notified =
                CompletableFuture.supplyAsync(() -> peer.command("notify fanout 1 60000"));
        Dataplane writer = remover("node-a");
        RegisteredBuffer written = buffer(writer, MIB, 21);
        try (TransferBatch batch =
                writer.engine()
                        .submitWithNotify(
                                List.of(write(written, 0, "child", offset, MIB)), "fanout")) {
            batch.awaitSuccess(WAIT);
        }
        assertThat(notified.get(60, TimeUnit.SECONDS)).isEqualTo("1");
        assertThat(peer.command("crc " + offset + " " + MIB))
                .isEqualTo(Long.toString(Patterns.expectedCrc(MIB, 21)));
        // The child's object: a reader may not free it, a remover may, in the owner's allocator.
        assertThatThrownBy(() -> a.store().remove("child/obj"))
                .isInstanceOf(PermissionDeniedException.class);
        assertThat(remover("control").store().remove("child/obj")).isTrue();
        assertThat(Long.parseLong(peer.command("free"))).isEqualTo(segSize);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void aStorerPutsIntoAnotherProcessSegmentWhichItsOwnerAllocates(Transport t) throws Exception {
        long segSize = 16 * MIB;
        PeerProcess unit = peer(peerLabel(t), "unit", segSize);
        Dataplane client = storer("node-a");
        int size = 2 * MIB + 5;
        RegisteredBuffer src = buffer(client, size, 31);
        Counters before = client.counters();
        client.store().putFrom("client/obj", src, 0, size, ReplicateConfig.preferLocal("unit"));
        // One copy, in the unit's segment, written over the transport of the node labels.
        assertThat(client.store().locations("client/obj"))
                .singleElement()
                .satisfies(l -> assertThat(l.segment()).isEqualTo("unit"));
        assertTransport(client.counters().minus(before), t, 0, size);
        long offset = client.store().locations("client/obj").get(0).offset();
        assertThat(unit.command("crc " + offset + " " + size))
                .isEqualTo(Long.toString(Patterns.expectedCrc(size, 31)));
        long used = segSize - Long.parseLong(unit.command("free"));
        assertThat(used).isGreaterThanOrEqualTo(size);

        // A put that fails after its allocation (the key exists) frees it at the owner again.
        assertThatThrownBy(
                        () ->
                                client.store()
                                        .putFrom(
                                                "client/obj",
                                                src,
                                                0,
                                                size,
                                                ReplicateConfig.preferLocal("unit")))
                .isInstanceOf(ObjectExistsException.class);
        assertThat(segSize - Long.parseLong(unit.command("free"))).isEqualTo(used);

        // A plain peer still may not have the owner allocate.
        Dataplane reader = dp("node-c");
        RegisteredBuffer other = buffer(reader, MIB, 32);
        assertThatThrownBy(
                        () ->
                                reader.store()
                                        .putFrom(
                                                "reader/obj",
                                                other,
                                                0,
                                                MIB,
                                                ReplicateConfig.preferLocal("unit")))
                .isInstanceOf(SegmentFullException.class)
                .hasMessageContaining("unit");
        assertThat(remover("control").store().remove("client/obj")).isTrue();
        assertThat(Long.parseLong(unit.command("free"))).isEqualTo(segSize);
    }

    @Test
    void peerDeathMidTransferFailsWithPeerGoneNotAHang() throws Exception {
        Dataplane a = dp("node-a");
        int size = 32 * MIB;
        PeerProcess peer = peer("node-doomed", "doomed", size);
        peer.command("put doomed/obj 4096 1");
        RegisteredBuffer dst = a.registerBuffer(ByteBuffer.allocateDirect(size));
        CountDownLatch firstRead = new CountDownLatch(1);
        ExecutorService reader = Executors.newSingleThreadExecutor();
        try {
            Future<Throwable> failure =
                    reader.submit(
                            () -> {
                                for (; ; ) {
                                    try {
                                        a.engine()
                                                .transfer(
                                                        List.of(read(dst, 0, "doomed", 0, size)),
                                                        WAIT);
                                        firstRead.countDown();
                                    } catch (DataplaneException e) {
                                        return e;
                                    }
                                }
                            });
            assertThat(firstRead.await(60, TimeUnit.SECONDS)).isTrue();
            peer.kill();
            assertThat(failure.get(60, TimeUnit.SECONDS))
                    .isInstanceOfSatisfying(
                            PeerGoneException.class,
                            e -> assertThat(e.segment()).isEqualTo("doomed"));
        } finally {
            reader.shutdownNow();
        }
        long[] r = a.store().getIntoRanges("doomed/obj", List.of(new ReadRange(0, 4096, dst, 0)));
        assertThat(r).containsExactly(DataplaneError.PEER_GONE.code());
    }

    @Test
    void checkReadableNamesAMissingObjectAndADeadOwnerBeforeAnythingIsRead() throws Exception {
        Dataplane a = dp("node-a");
        PeerProcess peer = peer("node-probe", "probed", MIB);
        peer.command("put probed/one 4096 1");
        peer.command("put probed/two 4096 2");
        assertThat(a.store().checkReadable(List.of("probed/one", "probed/two")))
                .containsExactly("probed");
        assertThat(a.store().checkReadable(List.of("probed/one")))
                .as("a second check reuses the live control connection")
                .containsExactly("probed");
        assertThatThrownBy(() -> a.store().checkReadable(List.of("probed/one", "probed/none")))
                .isInstanceOfSatisfying(
                        ObjectNotFoundException.class,
                        e -> assertThat(e.key()).isEqualTo("probed/none"));

        peer.kill(); // its descriptor and directory entries stay, as after a crash
        long started = System.nanoTime();
        assertThatThrownBy(() -> a.store().checkReadable(List.of("probed/one")))
                .isInstanceOfSatisfying(
                        PeerGoneException.class, e -> assertThat(e.segment()).isEqualTo("probed"));
        assertThat(Duration.ofNanos(System.nanoTime() - started))
                .as("a refused connection is known at once, not after the io timeout")
                .isLessThan(Duration.ofSeconds(10));
    }

    /** Memory of a worker's own Mooncake Transfer Engine is only the Mooncake engine's target. */
    @Test
    void aWorkersOwnTransferEngineMemoryIsRefusedNamingTheEngine() {
        Dataplane a = dp("node-a");
        assertThatThrownBy(
                        () ->
                                a.attachForeignSegment(
                                        "rx-te", MIB, new ForeignBuffer("127.0.0.1:15001", 4096)))
                .isInstanceOfSatisfying(
                        ForeignSegmentUnsupportedException.class,
                        e -> assertThat(e.getMessage()).contains("'rx-te'", "127.0.0.1:15001"));
        assertThat(RedisSupport.hash(key("seg:rx-te"))).isEmpty();
    }
}
