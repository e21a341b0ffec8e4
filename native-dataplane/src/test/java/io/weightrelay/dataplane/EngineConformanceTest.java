package io.weightrelay.dataplane;

import static io.weightrelay.dataplane.TransferRequest.read;
import static io.weightrelay.dataplane.TransferRequest.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What every engine must do, written against the interfaces only and run on each engine by a
 * subclass with the same test count: {@link BuiltinEngineConformanceTest} and {@link
 * MooncakeEngineConformanceTest}, which only say how to open their engine ({@link
 * EngineTestSupport}). What one engine has and the other has not is tested in that engine's own
 * class: {@link BuiltinEngineOnlyTest}, {@link MooncakeEngineOnlyTest}.
 */
abstract class EngineConformanceTest extends EngineTestSupport {
    private static final int MIB = 1 << 20;

    @Test
    void aStoredObjectReadsBackRangeByRangeAndABadRangeFailsAlone() {
        Dataplane a = dp("node-a");
        String capacity = storeCapacity(a, "pub", 32 * MIB);
        int size = MIB + 13;
        LocalMemory src = filled(a, "src", size, 4);
        String k = key("m/1/w");
        a.store().putFrom(k, src, 0, size, ReplicateConfig.preferLocal(capacity));
        LocalMemory dst = memory(a, "dst", 2 * size);

        long[] r =
                a.store()
                        .getIntoRanges(
                                k,
                                List.of(
                                        new ReadRange(0, 1, dst, 0),
                                        new ReadRange(size - 1, 1, dst, 1),
                                        new ReadRange(size, 0, dst, 2),
                                        new ReadRange(0, size, dst, size),
                                        new ReadRange(-1, 2, dst, 0),
                                        new ReadRange(0, 10, dst, 2L * size - 5)));

        assertThat(r)
                .containsExactly(
                        1,
                        1,
                        0,
                        size,
                        DataplaneError.OUT_OF_BOUNDS.code(),
                        DataplaneError.OUT_OF_BOUNDS.code());
        ByteBuffer got = view(dst);
        assertThat(got.get(0)).isEqualTo(Patterns.at(0, 4));
        assertThat(got.get(1)).isEqualTo(Patterns.at(size - 1, 4));
        Patterns.assertHolds(got, size, size, 4);
        assertThat(a.store().exists(k)).isTrue();
        assertThat(a.store().size(k)).isEqualTo(size);
        assertThatThrownBy(
                        () ->
                                a.store()
                                        .putFrom(
                                                k,
                                                src,
                                                0,
                                                size,
                                                ReplicateConfig.preferLocal(capacity)))
                .isInstanceOfSatisfying(
                        ObjectExistsException.class, e -> assertThat(e.key()).isEqualTo(k));

        assertThat(a.store().remove(k)).isTrue();
        assertThat(a.store().remove(k)).isFalse();
        assertThat(a.store().exists(k)).isFalse();
        assertThatThrownBy(() -> a.store().getIntoRanges(k, List.of()))
                .isInstanceOfSatisfying(
                        ObjectNotFoundException.class, e -> assertThat(e.key()).isEqualTo(k));
        assertThatThrownBy(() -> a.store().size(k))
                .isInstanceOfSatisfying(
                        ObjectNotFoundException.class, e -> assertThat(e.key()).isEqualTo(k));
    }

    @Test
    void objectsLocatedTogetherReadAsIfLocatedAloneAndAMissingOneFailsOnlyItsRead() {
        Dataplane a = dp("node-a");
        String capacity = storeCapacity(a, "pub", 32 * MIB);
        Dataplane reader = dp("node-b");
        int size = 64 * 1024 + 7;
        LocalMemory src = filled(a, "src", size, 9);
        String x = key("m/1/x");
        String y = key("m/1/y");
        String missing = key("m/1/missing");
        a.store().putFrom(x, src, 0, size, ReplicateConfig.preferLocal(capacity));
        a.store().putFrom(y, src, 0, size, ReplicateConfig.preferLocal(capacity));
        LocalMemory dst = memory(reader, "dst", 2 * size);

        List<StoreClient.Located> located = reader.store().locate(List.of(x, missing, y));

        assertThat(located).extracting(StoreClient.Located::key).containsExactly(x, missing, y);
        assertThat(located.get(0).segments()).isNotEmpty();
        assertThat(located.get(1).segments()).isEmpty();
        long[] gotX =
                reader.store()
                        .getIntoRanges(located.get(0), List.of(new ReadRange(0, size, dst, 0)));
        long[] gotY =
                reader.store()
                        .getIntoRanges(located.get(2), List.of(new ReadRange(0, size, dst, size)));
        assertThat(gotX).containsExactly(size);
        assertThat(gotY).containsExactly(size);
        Patterns.assertHolds(view(dst), 0, size, 9);
        Patterns.assertHolds(view(dst), size, size, 9);
        assertThatThrownBy(
                        () ->
                                reader.store()
                                        .getIntoRanges(
                                                located.get(1),
                                                List.of(new ReadRange(0, 1, dst, 0))))
                .isInstanceOfSatisfying(
                        ObjectNotFoundException.class, e -> assertThat(e.key()).isEqualTo(missing));
        assertThat(reader.store().locate(List.of())).isEmpty();
        assertThat(reader.store().checkReadable(List.of(x, y))).isNotEmpty();
        assertThatThrownBy(() -> reader.store().checkReadable(List.of(x, missing, y)))
                .isInstanceOfSatisfying(
                        ObjectNotFoundException.class, e -> assertThat(e.key()).isEqualTo(missing));
        assertThat(a.store().removeAll(List.of(x, missing, y))).isEqualTo(2);
        assertThat(a.store().exists(x) || a.store().exists(y)).isFalse();
    }

    @Test
    void oneSidedWritesAndReadsLandWholeInvalidTasksFailAloneAndARecreatedSegmentIsFound() {
        Dataplane a = dp("node-a");
        Dataplane b = dp("node-b");
        Segment rx = b.createReceiveSegment("rx", MIB);
        assertThat(rx.kind()).isEqualTo(SegmentKind.RECEIVE);
        assertThat(rx.freeBytes()).isZero();
        int length = 256 * 1024 + 3;
        LocalMemory src = filled(a, "src", length, 21);

        try (TransferBatch batch =
                a.engine()
                        .submit(
                                List.of(
                                        write(src, 0, "rx", 4096, length),
                                        write(src, 0, "no-such-segment", 0, 16),
                                        write(src, 0, "rx", MIB - 8, 16),
                                        write(src, length - 8, "rx", 0, 16)))) {
            assertThat(batch.await(WAIT)).isTrue();
            assertThat(batch.statuses())
                    .extracting(TaskStatus::state)
                    .containsExactly(
                            TaskStatus.State.COMPLETED,
                            TaskStatus.State.FAILED,
                            TaskStatus.State.FAILED,
                            TaskStatus.State.FAILED);
            assertThat(batch.status(0).bytesTransferred()).isEqualTo(length);
            assertThat(batch.failure(batch.status(1)))
                    .isInstanceOfSatisfying(
                            UnknownSegmentException.class,
                            e -> assertThat(e.subject()).isEqualTo("no-such-segment"));
            assertThat(batch.failure(batch.status(2))).isInstanceOf(OutOfBoundsException.class);
            assertThat(batch.failure(batch.status(3))).isInstanceOf(OutOfBoundsException.class);
            assertThatThrownBy(() -> batch.awaitSuccess(WAIT))
                    .isInstanceOf(UnknownSegmentException.class);
        }
        Patterns.assertHolds(rx.byteBuffer(4096, length), 0, length, 21);
        assertThat(rx.byteBuffer(0, 4096).get(4095)).isZero();

        // and back: a reads what it wrote, one-sided, into other memory of its own
        LocalMemory back = memory(a, "back", length + 100);
        TestEngines.transfer(a, read(back, 100, "rx", 4096, length));
        Patterns.assertHolds(view(back), 100, length, 21);
        assertThat(view(back).get(99)).isZero();

        rx.close();
        assertThat(b.segment("rx")).isEmpty();
        assertThatThrownBy(() -> TestEngines.transfer(a, write(src, 0, "rx", 0, 16)))
                .isInstanceOfSatisfying(
                        UnknownSegmentException.class,
                        e -> assertThat(e.subject()).isEqualTo("rx"));
        Segment again = b.createReceiveSegment("rx", MIB);
        TestEngines.transfer(a, write(src, 0, "rx", 0, length));
        Patterns.assertHolds(again.byteBuffer(0, length), 0, length, 21);
    }

    /**
     * A one-sided write or read counts at its initiator on the transport its node labels name:
     * local to a segment of another engine on the same node, tcp to one on another node, whichever
     * path the engine carried the bytes on (issue 47: the Mooncake engine counted every write as
     * tcp, so a loader's writes into its own node's receive buffers looked like bytes that crossed
     * a network, more than the multi-host lab's interfaces carried).
     */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void oneSidedBytesCountAtTheirInitiatorOnTheTransportOfTheNodeLabels(Transport t) {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int length = MIB + 5;
        b.createReceiveSegment("rx", 2 * MIB);
        LocalMemory src = filled(a, "src", length, 23);
        LocalMemory back = memory(a, "back", length);
        Counters before = a.counters();
        TestEngines.transfer(a, write(src, 0, "rx", 0, length));
        TestEngines.transfer(a, read(back, 0, "rx", 0, length));
        Counters moved = a.counters().minus(before);
        Patterns.assertHolds(view(back), 0, length, 23);
        assertTransport(moved, t, length, length);
    }

    /**
     * A node delegate waits for one notify per writer batch, however many of its segments the batch
     * writes into (a direct-mode instance's two ranks, say): the counter moves once per target
     * engine, and only after every write of the batch landed, those into its other segments too
     * (issue 47: the Mooncake engine notified per segment, the first time before the writes into
     * the other segment had run).
     */
    @ParameterizedTest
    @EnumSource(Transport.class)
    void aBatchIntoTwoSegmentsOfOneEngineNotifiesItOnceAfterEveryWriteLanded(Transport t)
            throws Exception {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int size = 2 * MIB;
        Segment rank0 = b.createReceiveSegment("rank-0", size);
        Segment rank1 = b.createReceiveSegment("rank-1", size);
        LocalMemory src = filled(a, "src", 2 * size, 12);
        assertThat(b.engine().registerNotify("gen-9/batch-0")).isZero();
        CompletableFuture<Boolean> landedWhenNotified =
                CompletableFuture.supplyAsync(
                        () -> {
                            b.engine().awaitNotify("gen-9/batch-0", 1, WAIT);
                            ByteBuffer sent = view(src);
                            return rank0.byteBuffer().slice(0, size).equals(sent.slice(0, size))
                                    && rank1.byteBuffer()
                                            .slice(0, size)
                                            .equals(sent.slice(size, size));
                        });

        try (TransferBatch batch =
                a.engine()
                        .submitWithNotify(
                                List.of(
                                        write(src, 0, "rank-0", 0, MIB),
                                        write(src, MIB, "rank-0", MIB, MIB),
                                        write(src, size, "rank-1", 0, size)),
                                "gen-9/batch-0")) {
            batch.awaitSuccess(WAIT);
        }

        assertThat(landedWhenNotified.get(60, TimeUnit.SECONDS))
                .as("both segments held every byte when the counter moved")
                .isTrue();
        assertThatThrownBy(() -> b.engine().awaitNotify("gen-9/batch-0", 2, Duration.ofMillis(500)))
                .isInstanceOf(NotifyTimeoutException.class);
        assertThat(b.engine().notifyCount("gen-9/batch-0")).isEqualTo(1);
        b.engine().unregisterNotify("gen-9/batch-0");
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void writeWithNotifyBumpsTheTargetsCounterAfterTheBytesLanded(Transport t) throws Exception {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int size = 3 * MIB;
        Segment target = b.createReceiveSegment("delegate", size);
        LocalMemory src = filled(a, "src", size, 9);
        assertThat(b.engine().registerNotify("gen-7/batch-0")).isZero();
        CompletableFuture<Long> waiter =
                CompletableFuture.supplyAsync(
                        () -> b.engine().awaitNotify("gen-7/batch-0", 1, WAIT));

        try (TransferBatch batch =
                a.engine()
                        .submitWithNotify(
                                List.of(
                                        write(src, 0, "delegate", 0, MIB),
                                        write(src, MIB, "delegate", MIB, 2 * MIB)),
                                "gen-7/batch-0")) {
            batch.awaitSuccess(WAIT);
        }

        assertThat(waiter.get(60, TimeUnit.SECONDS)).isEqualTo(1);
        Patterns.assertHolds(target.byteBuffer(), 0, size, 9);
        assertThat(b.engine().notifyCount("gen-7/batch-0")).isEqualTo(1);
        assertThatThrownBy(() -> a.engine().notifyCount("gen-7/batch-0"))
                .isInstanceOfSatisfying(
                        DataplaneException.class,
                        e -> assertThat(e.error()).isEqualTo(DataplaneError.NOT_FOUND));
        b.engine().registerNotify("never");
        assertThatThrownBy(() -> b.engine().awaitNotify("never", 1, Duration.ofMillis(20)))
                .isInstanceOf(NotifyTimeoutException.class)
                .hasMessageContaining("never");
        // A name the target never registered: the bytes land, the notify is dropped, no counter.
        try (TransferBatch batch =
                a.engine().submitWithNotify(List.of(write(src, 0, "delegate", 0, MIB)), "stray")) {
            batch.awaitSuccess(WAIT);
        }
        assertThatThrownBy(() -> b.engine().notifyCount("stray"))
                .isInstanceOf(DataplaneException.class);
        // A batch with an invalid task: the valid one runs, and no notify goes out.
        Patterns.fill(view(src), 0, 16, 10);
        try (TransferBatch batch =
                a.engine()
                        .submitWithNotify(
                                List.of(
                                        write(src, 0, "delegate", 0, 16),
                                        write(src, 0, "no-such-segment", 0, 16)),
                                "gen-7/batch-0")) {
            batch.await(WAIT);
            assertThat(batch.status(0).state()).isEqualTo(TaskStatus.State.COMPLETED);
            assertThat(batch.failure(batch.status(1))).isInstanceOf(UnknownSegmentException.class);
        }
        Patterns.assertHolds(target.byteBuffer(), 0, 16, 10);
        assertThatThrownBy(() -> b.engine().awaitNotify("gen-7/batch-0", 2, Duration.ofMillis(300)))
                .isInstanceOf(NotifyTimeoutException.class);
        assertThat(b.engine().notifyCount("gen-7/batch-0")).isEqualTo(1);
        // The update ended: its counter is pruned, later notifies for it are dropped.
        b.engine().unregisterNotify("gen-7/batch-0");
        assertThatThrownBy(() -> b.engine().notifyCount("gen-7/batch-0"))
                .isInstanceOf(DataplaneException.class);
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void checksummedReadsGiveTheCrc32cOfEveryRangeAsItLanded(Transport t) {
        Dataplane owner = dp(peerLabel(t));
        Dataplane reader = t == Transport.LOCAL ? owner : dp("node-a");
        int size = 20 * MIB + 13;
        String capacity = storeCapacity(owner, "pub", 32 * MIB);
        LocalMemory src = filled(owner, "src", size, 11);
        String k = key("m/1/w");
        owner.store().putFrom(k, src, 0, size, ReplicateConfig.preferLocal(capacity));
        LocalMemory dst = memory(reader, "dst", 2 * size);
        // inline copies, one chunk, several chunks (combined across the 8 MiB chunk edges), odd
        // offsets and lengths, an empty range and one out of its destination's bounds
        List<ReadRange> ranges =
                List.of(
                        new ReadRange(0, 1, dst, 0),
                        new ReadRange(5, 300 * 1024 + 3, dst, 3),
                        new ReadRange(1, 17 * MIB + 5, dst, MIB + 1),
                        new ReadRange(size - 9, 9, dst, 19 * MIB),
                        new ReadRange(0, size, dst, size),
                        new ReadRange(7, 0, dst, 7),
                        new ReadRange(0, 10, dst, 2L * size - 5));

        StoreClient.ChecksummedReads r = reader.store().getIntoRangesChecksummed(k, ranges);

        assertThat(r.bytes())
                .containsExactly(
                        1,
                        300 * 1024 + 3,
                        17 * MIB + 5,
                        9,
                        size,
                        0,
                        DataplaneError.OUT_OF_BOUNDS.code());
        ByteBuffer got = view(dst);
        ByteBuffer published = view(src);
        for (int i = 0; i < ranges.size() - 1; i++) {
            ReadRange range = ranges.get(i);
            int expected = crc32c(published, (int) range.objectOffset(), (int) range.length());
            assertThat(r.crc32c()[i]).as("range %d", i).isEqualTo(expected);
            assertThat(crc32c(got, (int) range.destinationOffset(), (int) range.length()))
                    .as("range %d as it landed", i)
                    .isEqualTo(expected);
        }
        assertThat(r.crc32c()[ranges.size() - 1]).isZero();
        StoreClient.Located located = reader.store().locate(List.of(k)).get(0);
        StoreClient.ChecksummedReads again =
                reader.store()
                        .getIntoRangesChecksummed(located, List.of(new ReadRange(3, 64, dst, 0)));
        assertThat(again.bytes()).containsExactly(64);
        assertThat(again.crc32c()[0]).isEqualTo(crc32c(published, 3, 64));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void checksummedWritesGiveTheCrc32cOfWhatWasSent(Transport t) throws Exception {
        Dataplane a = dp("node-a");
        Dataplane b = dp(peerLabel(t));
        int size = 9 * MIB + 3;
        Segment target = b.createReceiveSegment("target", size + 4096);
        LocalMemory source = filled(a, "src", size, 5);
        ByteBuffer sent = view(source);
        try (TransferBatch batch =
                a.engine()
                        .submitChecksummed(
                                List.of(
                                        write(source, 0, "target", 0, size),
                                        write(source, 1, "target", size, 100),
                                        write(source, 0, "no-such-segment", 0, 16)))) {
            assertThat(batch.await(WAIT)).isTrue();
            assertThat(batch.crc32c(0)).isEqualTo(crc32c(sent, 0, size));
            assertThat(batch.crc32c(1)).isEqualTo(crc32c(sent, 1, 100));
            assertThatThrownBy(() -> batch.crc32c(2))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("has no checksum");
        }
        assertThat(crc32c(target.byteBuffer(), 0, size)).isEqualTo(crc32c(sent, 0, size));
        assertThat(b.engine().registerNotify("crc/batch-0")).isZero();
        try (TransferBatch batch =
                a.engine()
                        .submitChecksummedWithNotify(
                                List.of(write(source, 7, "target", 0, MIB)), "crc/batch-0")) {
            batch.awaitSuccess(WAIT);
            assertThat(batch.crc32c(0)).isEqualTo(crc32c(sent, 7, MIB));
        }
        assertThat(b.engine().awaitNotify("crc/batch-0", 1, WAIT)).isEqualTo(1);
        assertThat(crc32c(target.byteBuffer(), 0, MIB)).isEqualTo(crc32c(sent, 7, MIB));
        try (TransferBatch plain = a.engine().submit(List.of(write(source, 0, "target", 0, 8)))) {
            plain.awaitSuccess(WAIT);
            assertThatThrownBy(() -> plain.crc32c(0))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("not submitted checksummed");
        }
    }

    /**
     * The counters the services report: a publish into the publisher's own store capacity counts
     * local bytes and no tcp byte, each stored byte read counts once at its reader (local at the
     * publisher, tcp at an engine of another node), and a one-sided write counts at its initiator.
     */
    @Test
    void publishCountsNoTcpByteAndEveryStoredByteReadCountsOnceAtItsReader() {
        Dataplane publisher = dp("node-a");
        Dataplane remote = dp("node-b");
        String capacity = storeCapacity(publisher, "pub", 16 * MIB);
        int size = 6 * MIB + 100;
        LocalMemory staging = filled(publisher, "staging", size, 6);
        String k = key("m/2/w");
        Counters before = publisher.counters();

        publisher.store().putFrom(k, staging, 0, size, ReplicateConfig.preferLocal(capacity));

        Counters put = publisher.counters().minus(before);
        assertThat(put.tcpTotal()).isZero();
        assertThat(put.localWritten()).isEqualTo(size);
        int half = size / 2;
        LocalMemory farDst = memory(remote, "far", half);
        LocalMemory nearDst = memory(publisher, "near", size - half);
        Counters far0 = remote.counters();
        Counters near0 = publisher.counters();
        assertThat(remote.store().getIntoRanges(k, List.of(new ReadRange(0, half, farDst, 0))))
                .containsExactly(half);
        assertThat(
                        publisher
                                .store()
                                .getIntoRanges(
                                        k, List.of(new ReadRange(half, size - half, nearDst, 0))))
                .containsExactly(size - half);
        Counters far = remote.counters().minus(far0);
        Counters near = publisher.counters().minus(near0);
        assertThat(far.tcpRead()).isEqualTo(half);
        assertThat(far.localRead()).isZero();
        assertThat(near.localRead()).isEqualTo(size - half);
        assertThat(near.tcpRead()).isZero();
        assertThat(far.totalRead() + near.totalRead()).isEqualTo(size);
        ByteBuffer all = ByteBuffer.allocate(size);
        all.put(view(farDst)).put(view(nearDst));
        Patterns.assertHolds(all, 0, size, 6);

        remote.createReceiveSegment("rx", MIB);
        Counters w0 = publisher.counters();
        TestEngines.transfer(publisher, write(staging, 0, "rx", 0, 4096));
        Counters w = publisher.counters().minus(w0);
        assertThat(w.tcpWritten()).isEqualTo(4096);
        assertThat(w.totalRead() + w.localWritten()).isZero();
    }
}
