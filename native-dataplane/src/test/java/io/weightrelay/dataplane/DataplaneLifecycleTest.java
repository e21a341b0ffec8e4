package io.weightrelay.dataplane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Opening, publishing and closing the built-in dataplane. */
class DataplaneLifecycleTest {
    @RegisterExtension static final TestScope scope = new TestScope();

    private Dataplane open(String label) {
        return Dataplane.open(TestEngines.config(label, scope.prefix()).build());
    }

    @Test
    void aSegmentIsPublishedWhileOpenAndRemovedWithItsFileOnClose() throws Exception {
        try (Dataplane dp = open("node-a")) {
            Segment seg = dp.createSegment("pub", 1 << 20);
            Map<String, String> descriptor = RedisSupport.hash(scope.prefix() + "seg:pub");
            assertThat(descriptor)
                    .containsEntry("node", "node-a")
                    .containsEntry("host", "127.0.0.1")
                    .containsEntry("port", Integer.toString(dp.tcpPort()))
                    .containsEntry("size", Integer.toString(1 << 20))
                    .containsEntry("shm", seg.shmPath().toString())
                    .containsEntry("kind", "store");
            assertThat(Files.size(seg.shmPath())).isEqualTo(1 << 20);
            Path owner = Path.of(seg.shmPath() + ".owner");
            assertThat(owner).exists(); // its ownership lock lives beside it, not inside it

            ByteBuffer stale = seg.byteBuffer();
            stale.put(0, (byte) 42);
            seg.close();
            seg.close();

            assertThat(RedisSupport.hash(scope.prefix() + "seg:pub")).isEmpty();
            assertThat(seg.shmPath()).doesNotExist();
            assertThat(owner).doesNotExist();
            assertThat(stale.get(0)).isZero(); // detached: private zero pages, not a crash
            assertThatThrownBy(seg::byteBuffer).isInstanceOf(DataplaneClosedException.class);
            assertThatThrownBy(() -> dp.createSegment("bad name", 10))
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void aDescriptorRedisLostIsPublishedAgainAndAClosedSegmentsNever() throws Exception {
        try (Dataplane dp = open("node-a")) {
            Segment kept = dp.createSegment("kept", 1 << 20);
            Segment closed = dp.createSegment("closed", 1 << 20);
            assertThat(dp.reannounceSegments()).as("nothing missing").isEmpty();
            closed.close();
            // Redis restarted empty: every key of the data plane is gone
            RedisSupport.deleteKeys(scope.prefix());
            assertThat(RedisSupport.hash(scope.prefix() + "seg:kept")).isEmpty();

            assertThat(dp.reannounceSegments()).containsExactly("kept");
            assertThat(RedisSupport.hash(scope.prefix() + "seg:kept"))
                    .containsEntry("shm", kept.shmPath().toString())
                    .containsEntry("port", Integer.toString(dp.tcpPort()));
            assertThat(RedisSupport.hash(scope.prefix() + "seg:closed")).isEmpty();
            assertThat(dp.reannounceSegments()).isEmpty();
        }
    }

    @Test
    void closingTheDataplaneClosesWhatItCreatedAndLaterCallsFailClearly() {
        Dataplane dp = open("node-a");
        Segment seg = dp.createSegment("pub", 1 << 20);
        RegisteredBuffer buf = dp.registerBuffer(ByteBuffer.allocateDirect(4096));
        assertThat(dp.segment("pub")).containsSame(seg);
        assertThatThrownBy(() -> dp.createSegment("pub", 1 << 20))
                .isInstanceOfSatisfying(
                        DataplaneException.class,
                        e -> assertThat(e.error()).isEqualTo(DataplaneError.EXISTS));

        dp.close();
        dp.close();

        assertThat(seg.shmPath()).doesNotExist();
        assertThat(dp.segment("pub")).isEmpty();
        assertThatThrownBy(dp::counters).isInstanceOf(DataplaneClosedException.class);
        assertThatThrownBy(
                        () ->
                                dp.engine()
                                        .submit(
                                                List.of(
                                                        TransferRequest.read(
                                                                buf, 0, "pub", 0, 16))))
                .isInstanceOf(DataplaneClosedException.class);
        assertThatThrownBy(() -> dp.engine().awaitNotify("n", 1, Duration.ofSeconds(1)))
                .isInstanceOf(DataplaneClosedException.class);
        assertThatThrownBy(() -> dp.store().exists("k"))
                .isInstanceOf(DataplaneClosedException.class);
    }

    @Test
    void aBlockedNotifyWaitReturnsWhenTheDataplaneCloses() throws Exception {
        Dataplane dp = open("node-a");
        Thread closer =
                new Thread(
                        () -> {
                            try {
                                Thread.sleep(200);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            dp.close();
                        });
        dp.engine().registerNotify("never");
        closer.start();
        assertThatThrownBy(() -> dp.engine().awaitNotify("never", 1, Duration.ofMinutes(5)))
                .isInstanceOf(DataplaneClosedException.class);
        closer.join(TimeUnit.SECONDS.toMillis(30));
        assertThat(closer.isAlive()).isFalse();
    }

    @Test
    void aRegisteredBufferIsAddressedFromItsFirstByteWhateverItsPosition() {
        try (Dataplane dp = open("node-a")) {
            Segment seg = dp.createSegment("pub", 4096);
            ByteBuffer direct = ByteBuffer.allocateDirect(4096);
            Patterns.fill(direct, 0, 4096, 5);
            direct.position(100);
            RegisteredBuffer buf = dp.registerBuffer(direct);
            dp.engine()
                    .transfer(
                            List.of(TransferRequest.write(buf, 0, "pub", 0, 4096)),
                            Duration.ofSeconds(30));
            Patterns.assertHolds(seg.byteBuffer(), 0, 4096, 5);
        }
    }

    @Test
    void aSegmentNameOfALiveEngineIsRefusedAndOneOfAClosedOrDeadEngineTakenOver() {
        try (Dataplane first = open("node-a");
                Dataplane second = open("node-b")) {
            Segment seg = first.createSegment("shared-name", 4096);
            assertThatThrownBy(() -> second.createSegment("shared-name", 4096))
                    .isInstanceOfSatisfying(
                            DataplaneException.class,
                            e -> assertThat(e.error()).isEqualTo(DataplaneError.EXISTS))
                    .hasMessageContaining("live engine");
            first.close(); // its descriptor goes away with it
            assertThat(second.createSegment("shared-name", 4096).shmPath())
                    .isEqualTo(seg.shmPath());

            // A descriptor left behind by a killed owner (nothing listens on its port).
            RedisSupport.deadOwnerDescriptor(scope.prefix(), "ghost", Map.of("node", "node-x"));
            Segment ghost = second.createSegment("ghost", 4096);
            assertThat(RedisSupport.hash(scope.prefix() + "seg:ghost"))
                    .containsEntry("port", Integer.toString(second.tcpPort()));
            ghost.close();
        }
    }

    @Test
    void aReceiveSegmentIsPublishedAsSuchAndItsOwnerRefusesEveryAllocation() {
        try (Dataplane owner = open("node-a");
                Dataplane sameNode = open("node-a");
                Dataplane otherNode = open("node-b")) {
            Segment recv = owner.createReceiveSegment("recv", 1 << 20);
            assertThat(RedisSupport.hash(scope.prefix() + "seg:recv"))
                    .containsEntry("kind", "receive")
                    .containsEntry("size", Integer.toString(1 << 20))
                    .containsEntry("shm", recv.shmPath().toString());
            assertThat(recv.freeBytes()).isZero();
            assertThat(recv.toString()).contains("RECEIVE");
            // What a client that ignores the kind (an older one) would do: ask anyway. The owner
            // has no capacity in it; other engines, of the same node or another, are refused
            // before any owner is asked: only the owner allocates in a segment.
            assertThatThrownBy(() -> ((BuiltinTransferEngine) owner.engine()).alloc("recv", 64))
                    .isInstanceOf(SegmentFullException.class)
                    .hasMessageContaining("recv");
            for (Dataplane client : List.of(sameNode, otherNode)) {
                assertThatThrownBy(
                                () -> ((BuiltinTransferEngine) client.engine()).alloc("recv", 64))
                        .isInstanceOf(PermissionDeniedException.class)
                        .hasMessageContaining("recv");
            }
            recv.close();
            assertThat(RedisSupport.hash(scope.prefix() + "seg:recv")).isEmpty();
            assertThat(recv.shmPath()).doesNotExist();
        }
    }

    @Test
    void aDescriptorWithoutKindIsStoreCapacityAndAnUnknownKindIsNot() {
        try (Dataplane owner = open("node-a")) {
            owner.createSegment("legacy", 1 << 20);
            RedisSupport.hashDelete(
                    scope.prefix() + "seg:legacy", "kind"); // as written before receive segments
            RegisteredBuffer src = owner.registerBuffer(ByteBuffer.allocateDirect(4096));
            owner.store().putFrom("compat/1", src, 0, 4096, noPreference());
            assertThat(owner.store().locations("compat/1").get(0).segment()).isEqualTo("legacy");
        }
        try (Dataplane owner = open("node-a")) {
            owner.createSegment("future", 1 << 20);
            RedisSupport.hashSet(scope.prefix() + "seg:future", Map.of("kind", "from-the-future"));
            RegisteredBuffer src = owner.registerBuffer(ByteBuffer.allocateDirect(4096));
            assertThatThrownBy(
                            () -> owner.store().putFrom("compat/2", src, 0, 4096, noPreference()))
                    .isInstanceOf(SegmentFullException.class);
        }
    }

    @Test
    void aSegmentMadeAnewHoldsNoObjectOfItsPredecessor() {
        try (Dataplane first = open("node-a")) {
            Segment seg = first.createSegment("pub", 1 << 20);
            RegisteredBuffer src = first.registerBuffer(ByteBuffer.allocateDirect(4096));
            first.store().putFrom("m/1/w", src, 0, 4096, ReplicateConfig.preferLocal("pub"));
            first.store().putFrom("m/1/other", src, 0, 4096, noPreference());
            assertThat(seg.freeBytes()).isEqualTo((1 << 20) - 2 * 4096);
        } // closed without removing its objects, as a crash would leave them
        try (Dataplane second = open("node-a")) {
            second.createSegment("unrelated", 4096);
            assertThat(second.store().exists("m/1/w")).isTrue(); // other names keep theirs
            Segment again = second.createSegment("pub", 1 << 20);
            // the new owner is told exactly which objects went with the old file
            assertThat(again.purgedOnCreate()).containsExactly("m/1/other", "m/1/w");
            assertThat(second.store().exists("m/1/w")).isFalse();
            assertThat(second.store().exists("m/1/other")).isFalse();
            assertThat(again.freeBytes()).isEqualTo(1 << 20);
            RegisteredBuffer dst = second.registerBuffer(ByteBuffer.allocateDirect(4096));
            assertThatThrownBy(
                            () ->
                                    second.store()
                                            .getIntoRanges(
                                                    "m/1/w",
                                                    List.of(new ReadRange(0, 4096, dst, 0))))
                    .isInstanceOf(ObjectNotFoundException.class);
        }
    }

    @Test
    void aReaderThatResolvedASegmentReadsItsNewIncarnationNeverTheOldOne() {
        try (Dataplane local = open("node-a");
                Dataplane remote = open("node-b")) {
            ByteBuffer ones = ByteBuffer.allocateDirect(4096);
            while (ones.hasRemaining()) {
                ones.put((byte) 0x11);
            }
            try (Dataplane first = open("node-a")) {
                first.createSegment("pub", 1 << 20);
                RegisteredBuffer src = first.registerBuffer(ones);
                first.store().putFrom("m/1/w", src, 0, 4096, ReplicateConfig.preferLocal("pub"));
                // both readers resolve the segment: one maps its file, one connects over tcp
                assertThat(readAll(local, "m/1/w")).containsOnly((byte) 0x11);
                assertThat(readAll(remote, "m/1/w")).containsOnly((byte) 0x11);
            } // closed without removing its objects, as a crash would leave them
            try (Dataplane second = open("node-a")) {
                second.createSegment("pub", 1 << 20);
                ByteBuffer twos = ByteBuffer.allocateDirect(4096);
                while (twos.hasRemaining()) {
                    twos.put((byte) 0x22);
                }
                RegisteredBuffer src = second.registerBuffer(twos);
                second.store().putFrom("m/2/w", src, 0, 4096, ReplicateConfig.preferLocal("pub"));
                assertThat(second.store().locations("m/2/w").get(0).offset())
                        .as("the new object reuses the old one's offset")
                        .isZero();
                // the old mapping (a file since unlinked) and the old endpoint are not used
                assertThat(readAll(local, "m/2/w")).containsOnly((byte) 0x22);
                assertThat(readAll(remote, "m/2/w")).containsOnly((byte) 0x22);
                assertThatThrownBy(() -> readAll(local, "m/1/w"))
                        .isInstanceOf(ObjectNotFoundException.class);
            }
        }
    }

    /**
     * A loader maps its node's segments ahead of its first update: each segment of its node that it
     * does not own, once; none of another node's; and it looks again only after the segments epoch
     * moved. A transfer into a segment mapped ahead lands.
     */
    @Test
    void mapNodeSegmentsMapsEachOtherSegmentOfTheNodeOnceAndLooksAgainOnlyAfterAnEpochMove() {
        try (Dataplane loader = open("node-a");
                Dataplane peer = open("node-a");
                Dataplane elsewhere = open("node-b")) {
            loader.createSegment("mine", 1 << 20);
            peer.createSegment("peer-1", 1 << 20);
            elsewhere.createSegment("far", 1 << 20);
            assertThat(loader.engine().mapNodeSegments()).as("peer-1 only").isEqualTo(1);
            assertThat(loader.engine().mapNodeSegments()).as("no epoch move").isZero();

            Segment second = peer.createSegment("peer-2", 1 << 20);
            assertThat(loader.engine().mapNodeSegments()).as("the new one only").isEqualTo(1);
            assertThat(elsewhere.engine().mapNodeSegments())
                    .as("node-b maps nothing of node-a")
                    .isZero();

            ByteBuffer threes = ByteBuffer.allocateDirect(4096);
            while (threes.hasRemaining()) {
                threes.put((byte) 0x33);
            }
            RegisteredBuffer src = loader.registerBuffer(threes);
            TestEngines.transfer(loader, TransferRequest.write(src, 0, "peer-2", 512, 4096));
            ByteBuffer landed = second.byteBuffer(512, 4096);
            while (landed.hasRemaining()) {
                assertThat(landed.get()).isEqualTo((byte) 0x33);
            }
        }
    }

    /**
     * A loader whose engine registers again creates its receive segments afresh in the same engine:
     * same name, size, file path and engine id, so the descriptor is unchanged. A loader beside it
     * that mapped the old file must not keep writing into pages nobody reads: the revalidation at
     * its next prepare forgets the old mapping, and its next write maps the new file; a probe maps
     * the new file at once.
     */
    @Test
    void revalidateForgetsASameNodeMappingWhoseFileItsOwnerCreatedAfresh() {
        try (Dataplane owner = open("node-a");
                Dataplane neighbour = open("node-a")) {
            Segment first = owner.createReceiveSegment("again", 1 << 20);
            RegisteredBuffer src = neighbour.registerBuffer(ByteBuffer.allocateDirect(4096));
            Patterns.fill(src.byteBuffer(), 0, 4096, 7);
            List<TransferRequest> write = List.of(TransferRequest.write(src, 0, "again", 0, 4096));
            neighbour.engine().transfer(write, Duration.ofSeconds(30));
            Patterns.assertHolds(first.byteBuffer(), 0, 4096, 7);
            assertThat(neighbour.engine().revalidate()).as("nothing changed").isZero();

            first.close();
            Segment second = owner.createReceiveSegment("again", 1 << 20);
            assertThat(neighbour.engine().revalidate()).isEqualTo(1);
            neighbour.engine().transfer(write, Duration.ofSeconds(30));
            Patterns.assertHolds(second.byteBuffer(), 0, 4096, 7);
            assertThat(neighbour.engine().revalidate()).as("the new file").isZero();

            // Created afresh after the revalidation: the probe a loader makes of the peers it
            // writes into, while the others prepare, maps the current file.
            second.close();
            Segment third = owner.createReceiveSegment("again", 1 << 20);
            neighbour.engine().probe("again");
            Patterns.fill(src.byteBuffer(), 0, 4096, 8);
            neighbour.engine().transfer(write, Duration.ofSeconds(30));
            Patterns.assertHolds(third.byteBuffer(), 0, 4096, 8);
            assertThat(neighbour.engine().revalidate()).as("mapped by the probe").isZero();
        }
    }

    /**
     * A loader revalidates every segment it resolved at each prepare, all descriptors in one read:
     * exactly those whose owner made them anew or left are forgotten.
     */
    @Test
    void revalidateForgetsExactlyTheSegmentsWhoseOwnerChangedOrLeft() {
        try (Dataplane reader = open("node-b");
                Dataplane keeps = open("node-a")) {
            keeps.createSegment("kept", 1 << 20);
            Dataplane leaves = open("node-a");
            leaves.createSegment("gone", 1 << 20);
            Dataplane restarts = open("node-a");
            restarts.createSegment("moved", 1 << 20);
            for (String segment : List.of("kept", "gone", "moved")) {
                reader.engine().probe(segment);
            }
            assertThat(reader.engine().revalidate()).as("nothing changed").isZero();

            leaves.close();
            restarts.close();
            try (Dataplane restarted = open("node-a")) {
                restarted.createSegment("moved", 1 << 20);
                assertThat(reader.engine().revalidate()).isEqualTo(2);
                assertThat(reader.engine().revalidate()).as("forgotten once").isZero();
                reader.engine().probe("moved");
                assertThat(reader.engine().revalidate()).as("the new incarnation").isZero();
            }
        }
    }

    private static byte[] readAll(Dataplane reader, String key) {
        RegisteredBuffer dst = reader.registerBuffer(ByteBuffer.allocateDirect(4096));
        try {
            long[] n = reader.store().getIntoRanges(key, List.of(new ReadRange(0, 4096, dst, 0)));
            assertThat(n).as(key).containsExactly(4096L);
            byte[] out = new byte[4096];
            dst.byteBuffer().duplicate().get(out);
            return out;
        } finally {
            dst.close();
        }
    }

    @Test
    void aRecreatedSegmentPurgesEveryEntryNamingItAndOnlyThoseAcrossDirectoryPages() {
        RedisClient client = RedisClient.create(RedisSupport.URI);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            var redis = c.sync();
            for (int i = 0; i < 12_500; i++) { // more than one SCAN page
                redis.hset(
                        scope.prefix() + "obj:m/" + (i % 3) + "/f" + i,
                        Map.of("size", "64", "pin", "1", "replicas", "seg-a@" + (64 * i)));
            }
            redis.hset(scope.prefix() + "obj:m/9/other", Map.of("replicas", "seg-b@0"));
            redis.hset(scope.prefix() + "obj:m/9/both", Map.of("replicas", "seg-b@0;seg-a@128"));
            redis.hset(scope.prefix() + "obj:m/9/prefixed", Map.of("replicas", "seg-aa@0"));
            try (Dataplane dp = open("node-a")) {
                List<String> purged = dp.createSegment("seg-a", 1 << 20).purgedOnCreate();
                assertThat(purged).hasSize(12_501).contains("m/9/both", "m/0/f0", "m/2/f12497");
                assertThat(purged).isSorted().doesNotContain("m/9/other", "m/9/prefixed");
                assertThat(redis.exists(scope.prefix() + "obj:m/1/f1")).isZero();
                assertThat(redis.exists(scope.prefix() + "obj:m/9/other")).isEqualTo(1L);
                assertThat(redis.exists(scope.prefix() + "obj:m/9/prefixed")).isEqualTo(1L);
                assertThat(dp.createSegment("seg-c", 4096).purgedOnCreate()).isEmpty();
            }
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    @Test
    void aDescriptorWithoutHostIdentityFailsClearlyAndIsNeverMapped() {
        try (Dataplane owner = open("node-a");
                Dataplane peer = open("node-a")) {
            Segment seg = owner.createSegment("old-format", 1 << 20);
            Patterns.fill(seg.byteBuffer(), 0, 1 << 20, 3);
            RedisSupport.hashDelete(
                    scope.prefix() + "seg:old-format",
                    "hostid"); // as written before host identities
            RedisSupport.hashDelete(scope.prefix() + "seg:old-format", "engine");
            RegisteredBuffer dst = peer.registerBuffer(ByteBuffer.allocateDirect(4096));
            assertThatThrownBy(
                            () ->
                                    peer.engine()
                                            .transfer(
                                                    List.of(
                                                            TransferRequest.write(
                                                                    dst, 0, "old-format", 0, 4096)),
                                                    Duration.ofSeconds(30)))
                    .isInstanceOf(MetadataException.class)
                    .hasMessageContaining("old-format")
                    .hasMessageContaining("older data plane");
            Patterns.assertHolds(seg.byteBuffer(), 0, 1 << 20, 3);
        }
    }

    private static ReplicateConfig noPreference() {
        return new ReplicateConfig(1, List.of(), true);
    }

    @Test
    void configurationIsValidated() {
        assertThatThrownBy(() -> DataplaneConfig.builder("n").keyPrefix("other:").build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("wr:");
        assertThatThrownBy(() -> DataplaneConfig.builder(" ").build())
                .isInstanceOf(IllegalArgumentException.class);
        DataplaneConfig c = DataplaneConfig.builder("n").build();
        assertThat(c.tcpBindHost()).isEqualTo("127.0.0.1");
        assertThat(c.advertiseHost()).isEqualTo("127.0.0.1");
        assertThat(c.tcpPort()).isZero();
    }

    @Test
    void anUnreachableRedisFailsOpenWithAMetadataException() {
        DataplaneConfig c =
                DataplaneConfig.builder("n")
                        .redisUri("redis://127.0.0.1:1")
                        .keyPrefix(scope.prefix())
                        .ioTimeout(Duration.ofSeconds(2))
                        .build();
        assertThatThrownBy(() -> Dataplane.open(c))
                .isInstanceOf(MetadataException.class)
                .hasMessageContaining("127.0.0.1:1");
    }
}
