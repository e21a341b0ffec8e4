package io.weightrelay.dataplane;

import static io.weightrelay.dataplane.TransferRequest.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.testkit.process.ChildJvm;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link EngineConformanceTest} on the real Mooncake ({@link DataplaneEngine#MOONCAKE}): the pinned
 * wheel's {@code mooncake_master} and one Mooncake agent per data plane, all in a network namespace
 * this class makes with only its loopback up (Mooncake's listeners bind the wildcard address), as
 * {@link MooncakeAgentTest} does; this JVM and Redis stay in the default namespace (the directory
 * of receive segments is in Redis, reached from Java only). Needs root and {@code ip netns}.
 *
 * <p>The tests of {@link DataplaneConformanceTest} (built-in engine only) that do not run here, and
 * why:
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
 *
 * <p>Besides the shared tests, the Mooncake-only behaviour: refusals naming the method, and a
 * remove that waits out a read's lease.
 */
class MooncakeEngineConformanceTest extends EngineConformanceTest {
    private static final int MIB = 1 << 20;
    private static final Duration LEASE_WAIT = Duration.ofSeconds(10);
    private static MooncakeMaster master;
    private static Path workDir;

    @BeforeAll
    static void startMaster() throws Exception {
        workDir = Files.createTempDirectory(Path.of("/tmp"), "wr-mce");
        master = MooncakeMaster.start("wr-mce", workDir.resolve("master.log"));
    }

    @AfterAll
    static void stopMaster() throws Exception {
        if (master != null) {
            master.close();
        }
        if (workDir != null) {
            try (var files = Files.list(workDir)) {
                for (Path f : files.toList()) {
                    Files.deleteIfExists(f);
                }
            }
            Files.deleteIfExists(workDir);
        }
    }

    private static MooncakeConfig mooncake(long segmentSize) {
        return mooncake(segmentSize, LEASE_WAIT);
    }

    private static MooncakeConfig mooncake(long segmentSize, Duration leaseWait) {
        return new MooncakeConfig(
                MooncakeMaster.VENV.resolve("bin/python"),
                MooncakeMaster.PYTHON_SRC,
                master.prefix(),
                MooncakeMaster.RPC,
                "127.0.0.1",
                segmentSize,
                "tcp",
                MooncakeConfig.P2P_HANDSHAKE,
                workDir,
                Duration.ofSeconds(60),
                Duration.ofSeconds(60),
                leaseWait);
    }

    @Override
    protected Dataplane open(String nodeLabel, String keyPrefix) {
        return Dataplane.open(
                TestEngines.config(nodeLabel, keyPrefix)
                        .engine(DataplaneEngine.MOONCAKE)
                        .mooncake(mooncake(64L * MIB))
                        .build());
    }

    /** The agent's mounted segment is the capacity: nothing to create. */
    @Override
    protected String storeCapacity(Dataplane dp, String name, long size) {
        return ((MooncakeDataplane) dp).storeSegment();
    }

    @Override
    protected LocalMemory memory(Dataplane dp, String name, int size) {
        return dp.createReceiveSegment(name, size);
    }

    @Test
    void whatMooncakeHasNoEquivalentForIsRefusedNamingTheMethod() {
        Dataplane a = dp("node-a");
        assertThat(a).isInstanceOf(MooncakeDataplane.class);
        Segment rx = a.createReceiveSegment("rx", MIB);
        assertThatThrownBy(() -> a.createSegment("pub", 16L * MIB))
                .isInstanceOfSatisfying(
                        MooncakeUnsupportedException.class,
                        e -> {
                            assertThat(e.method()).isEqualTo("Dataplane.createSegment");
                            assertThat(e.getMessage())
                                    .contains(((MooncakeDataplane) a).storeSegment());
                        });
        assertThatThrownBy(() -> a.registerBuffer(ByteBuffer.allocateDirect(4096)))
                .isInstanceOfSatisfying(
                        MooncakeUnsupportedException.class,
                        e -> assertThat(e.method()).isEqualTo("Dataplane.registerBuffer"));
        assertThatThrownBy(() -> a.store().reserve(rx, 4096))
                .isInstanceOfSatisfying(
                        MooncakeUnsupportedException.class,
                        e -> assertThat(e.method()).isEqualTo("StoreClient.reserve"));
        assertThatThrownBy(() -> a.engine().probe("rx"))
                .isInstanceOfSatisfying(
                        MooncakeUnsupportedException.class,
                        e -> assertThat(e.method()).isEqualTo("TransferEngine.probe"));
        assertThat(a.engine().revalidate()).isZero();
    }

    @Test
    void aRemoveWaitsOutAReadsLeaseAndFailsNamingItWhenTheLeaseOutlivesTheWait() {
        Dataplane impatient =
                scope.closeAfter(
                        Dataplane.open(
                                TestEngines.config("node-a", scope.prefix())
                                        .engine(DataplaneEngine.MOONCAKE)
                                        .mooncake(mooncake(64L * MIB, Duration.ZERO))
                                        .build()));
        Segment src = impatient.createReceiveSegment("src", MIB);
        String k = key("leased");
        impatient
                .store()
                .putFrom(
                        k,
                        src,
                        0,
                        4096,
                        ReplicateConfig.preferLocal(
                                ((MooncakeDataplane) impatient).storeSegment()));
        assertThat(impatient.store().getIntoRanges(k, List.of(new ReadRange(0, 16, src, 8192))))
                .containsExactly(16);

        assertThatThrownBy(() -> impatient.store().remove(k))
                .isInstanceOfSatisfying(
                        MooncakeOperationException.class,
                        e -> {
                            assertThat(e.code()).isEqualTo(-706);
                            assertThat(e.codeName()).isEqualTo("OBJECT_HAS_LEASE");
                            assertThat(e.key()).isEqualTo(k);
                        });
        assertThat(impatient.store().exists(k)).isTrue(); // the object stays
        Dataplane patient = dp("node-b"); // waits up to LEASE_WAIT; the master's TTL is 500 ms
        assertThat(patient.store().remove(k)).isTrue();
        assertThat(patient.store().exists(k)).isFalse();
    }

    private ChildJvm owner(String segment) throws Exception {
        List<String> args = new java.util.ArrayList<>();
        args.addAll(List.of(RedisSupport.URI, scope.prefix(), workDir.toString(), segment));
        args.addAll(master.prefix());
        return scope.closeAfter(
                ChildJvm.start(
                        "Mooncake segment owner",
                        MooncakeSegmentOwnerMain.class,
                        args.toArray(String[]::new)));
    }

    /**
     * Issue 47: a loader killed with SIGKILL left its entries in the directory, and its
     * replacement's receive segments were refused as another engine's. A name whose owner's JVM is
     * gone (its owner lock free) is taken over, the dead owner's file removed; a live owner in
     * another process keeps its name, refused as before.
     */
    @Test
    void aKilledEnginesNameIsTakenOverWithItsFileGoneAndALiveEnginesStaysRefused()
            throws Exception {
        ChildJvm killed = owner("rx-killed");
        ChildJvm live = owner("rx-live");
        Path killedFile = Path.of(killed.ready());
        Path liveFile = Path.of(live.ready());
        String killedEntry = scope.prefix() + "mc:seg:rx-killed";
        String liveEndpoint = RedisSupport.hash(scope.prefix() + "mc:seg:rx-live").get("endpoint");
        assertThat(RedisSupport.hash(killedEntry)).containsKey("endpoint");

        killed.kill();
        assertThat(killedFile).as("SIGKILL leaves the file").exists();
        // the sweep of both engines' files (the lab's after a kill) takes the dead owner's alone
        assertThat(Dataplane.reclaimOrphanedSegmentFiles(Path.of("/dev/shm")))
                .anyMatch(r -> r.path().equals(killedFile) && r.bytes() == MIB)
                .noneMatch(r -> r.path().equals(liveFile));
        assertThat(killedFile).doesNotExist();
        assertThat(liveFile).exists();
        Dataplane next = dp("node-b");
        Segment rx = next.createReceiveSegment("rx-killed", MIB);
        assertThat(RedisSupport.hash(killedEntry))
                .containsEntry("endpoint", "127.0.0.1:" + next.tcpPort())
                .containsEntry("node", "node-b");
        Dataplane a = dp("node-a");
        Segment src = a.createReceiveSegment("src", MIB);
        Patterns.fill(src.byteBuffer(), 0, 4096, 9);
        TestEngines.transfer(a, write(src, 0, "rx-killed", 0, 4096));
        Patterns.assertHolds(rx.byteBuffer(), 0, 4096, 9);

        assertThatThrownBy(() -> next.createReceiveSegment("rx-live", MIB))
                .isInstanceOfSatisfying(
                        DataplaneException.class,
                        e -> {
                            assertThat(e.error()).isEqualTo(DataplaneError.EXISTS);
                            assertThat(e.getMessage()).contains("'rx-live'", liveEndpoint);
                        });
        assertThat(live.ok("ping")).isEmpty();
        assertThat(liveFile).exists();
        live.close();
        assertThat(liveFile).doesNotExist();
        assertThat(RedisSupport.hash(scope.prefix() + "mc:seg:rx-live")).isEmpty();
    }

    /**
     * Issue 47: an agent killed while its JVM lives takes its mounted segment, and every object in
     * it, along. The data plane says so once, naming the dead agent, when asked (which starts the
     * successor); the successor mounts a new, empty segment that takes puts again.
     */
    @Test
    void anAgentThatDiedTookItsSegmentAlongWhichIsSaidOnceNamingItAndItsSuccessorStoresAgain()
            throws Exception {
        Dataplane a = dp("node-a");
        String capacity = storeCapacity(a, "pub", 32 * MIB);
        Segment src = a.createReceiveSegment("src", MIB);
        Patterns.fill(src.byteBuffer(), 0, 4096, 7);
        a.store().putFrom(key("m/1/w"), src, 0, 4096, ReplicateConfig.preferLocal(capacity));
        assertThat(a.storeCapacityLost()).as("nothing lost while the agent lives").isEmpty();

        MooncakeAgent agent = ((MooncakeDataplane) a).agent();
        long pid = agent.ready().pid();
        agent.process().destroyForcibly().waitFor();
        assertThat(a.storeCapacityLost())
                .singleElement()
                .asString()
                .contains("Mooncake agent pid " + pid, "exit status 137", "went with it");
        assertThat(a.storeCapacityLost()).as("said once").isEmpty();
        assertThat(agent.ready().pid()).isNotEqualTo(pid);

        String successor = storeCapacity(a, "pub", 32 * MIB);
        a.store().putFrom(key("m/2/w"), src, 0, 4096, ReplicateConfig.preferLocal(successor));
        Segment dst = a.createReceiveSegment("dst", MIB);
        assertThat(a.store().getIntoRanges(key("m/2/w"), List.of(new ReadRange(0, 4096, dst, 0))))
                .containsExactly(4096L);
        Patterns.assertHolds(dst.byteBuffer(), 0, 4096, 7);
    }

    @Test
    void theSegmentDirectoryIsInRedisANameIsOneEnginesAndALostEntryIsPublishedAgain() {
        Dataplane a = dp("node-a");
        Dataplane b = dp("node-b");
        Segment rx = b.createReceiveSegment("rx", MIB);
        Segment src = a.createReceiveSegment("src", MIB);
        Patterns.fill(src.byteBuffer(), 0, 4096, 5);
        String entry = scope.prefix() + "mc:seg:rx";
        assertThat(RedisSupport.hash(entry))
                .containsEntry("endpoint", "127.0.0.1:" + b.tcpPort())
                .containsEntry("size", Long.toString(MIB))
                .containsEntry("node", "node-b");
        assertThatThrownBy(() -> a.createReceiveSegment("rx", MIB))
                .isInstanceOfSatisfying(
                        DataplaneException.class,
                        e -> {
                            assertThat(e.error()).isEqualTo(DataplaneError.EXISTS);
                            assertThat(e.getMessage()).contains("'rx'", "127.0.0.1:" + b.tcpPort());
                        });

        RedisSupport.call(r -> r.del(entry)); // as after Redis lost its data
        assertThatThrownBy(() -> TestEngines.transfer(a, write(src, 0, "rx", 0, 4096)))
                .isInstanceOf(UnknownSegmentException.class);
        assertThat(b.reannounceSegments()).containsExactly("rx");
        assertThat(b.reannounceSegments()).isEmpty();
        TestEngines.transfer(a, write(src, 0, "rx", 0, 4096));
        Patterns.assertHolds(rx.byteBuffer(), 0, 4096, 5);

        b.close();
        assertThat(RedisSupport.hash(entry)).isEmpty();
        assertThat(rx.shmPath()).doesNotExist();
    }

    @Test
    void theMooncakeEngineNeedsItsAgentsConfiguration() {
        assertThatThrownBy(
                        () ->
                                TestEngines.config("node-a", scope.prefix())
                                        .engine(DataplaneEngine.MOONCAKE)
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("DataplaneConfig.mooncake");
        assertThat(TestEngines.config("node-a", scope.prefix()).build().engine())
                .isEqualTo(DataplaneEngine.BUILTIN);
        assertThatThrownBy(() -> DataplaneEngine.fromLabel("rdma"))
                .hasMessageContaining("'rdma'")
                .hasMessageContaining("builtin or mooncake");
    }
}
