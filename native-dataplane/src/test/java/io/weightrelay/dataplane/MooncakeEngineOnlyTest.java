package io.weightrelay.dataplane;

import static io.weightrelay.dataplane.TransferRequest.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.testkit.process.ChildJvm;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What only the Mooncake engine has, beside the shared {@link EngineConformanceTest} (which {@link
 * MooncakeEngineConformanceTest} runs on it), on the real Mooncake ({@link MooncakeTestEngines}):
 * refusals naming the method Mooncake has no equivalent for, a remove that waits out a read's
 * lease, the segment directory in Redis with a killed owner's names taken over, and the engine's
 * configuration. {@link BuiltinEngineOnlyTest} is the built-in engine's counterpart.
 */
class MooncakeEngineOnlyTest extends EngineTestSupport {
    private static final int MIB = 1 << 20;
    @RegisterExtension static final MooncakeTestEngines mooncake = new MooncakeTestEngines();

    @Override
    protected TestEngine engine() {
        return mooncake;
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
                                        .mooncake(mooncake.config(64L * MIB, Duration.ZERO))
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
        Dataplane patient =
                dp("node-b"); // waits up to MooncakeTestEngines.LEASE_WAIT; the master's TTL
        // is 500 ms
        assertThat(patient.store().remove(k)).isTrue();
        assertThat(patient.store().exists(k)).isFalse();
    }

    private ChildJvm owner(String segment) throws Exception {
        List<String> args = new java.util.ArrayList<>();
        args.addAll(
                List.of(RedisSupport.URI, scope.prefix(), mooncake.workDir().toString(), segment));
        args.addAll(mooncake.master().prefix());
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

    /**
     * A worker's own Transfer Engine as a target (issue 47): a plain Python process registers
     * memory with {@code mooncake.engine.TransferEngine} and nothing else; a data plane publishes
     * it under a segment name, another data plane's write with notify lands in the worker's memory
     * and notifies the publishing data plane (the worker counts none), which reads the bytes back;
     * close unpublishes the name.
     */
    @Test
    void memoryOfAWorkersOwnTransferEngineIsWrittenByNameAndNotifiesItsPublisher()
            throws Exception {
        String worker =
                String.join(
                        "\n",
                        "import json, mmap, os, sys",
                        "os.environ['MC_TCP_BIND_ADDRESS'] = '127.0.0.1'",
                        "from mooncake.engine import TransferEngine",
                        "from weight_relay.mooncake_client import buffer_address,"
                                + " register_receive_buffer",
                        "engine = TransferEngine()",
                        "assert engine.initialize('127.0.0.1', 'P2PHANDSHAKE', 'tcp', '') == 0",
                        "memory = mmap.mmap(-1, 1 << 20)",
                        "rb = register_receive_buffer(engine, '127.0.0.1', buffer_address(memory),"
                                + " len(memory))",
                        "print(json.dumps({'segment': rb.segment, 'address': rb.address}),"
                                + " flush=True)",
                        "for line in sys.stdin:",
                        "    print(memory[:4096].hex(), flush=True)");
        List<String> cmd = new java.util.ArrayList<>(mooncake.master().prefix());
        cmd.addAll(List.of(MooncakeMaster.VENV.resolve("bin/python").toString(), "-c", worker));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("PYTHONPATH", MooncakeMaster.PYTHON_SRC.toString());
        Process plain = pb.start();
        try (var out =
                        new java.io.BufferedReader(
                                new java.io.InputStreamReader(plain.getInputStream()));
                var in = new java.io.PrintWriter(plain.getOutputStream(), true)) {
            String line = out.readLine();
            assertThat(line).as("the worker's registered buffer").isNotNull();
            String segment = line.replaceAll(".*\"segment\": \"([^\"]+)\".*", "$1");
            long address = Long.parseLong(line.replaceAll(".*\"address\": (\\d+).*", "$1"));

            Dataplane loader = dp("node-a");
            ForeignSegment rx =
                    loader.attachForeignSegment("rx-te", MIB, new ForeignBuffer(segment, address));
            assertThat(RedisSupport.hash(key("mc:seg:rx-te")))
                    .containsEntry("endpoint", segment)
                    .containsEntry("address", Long.toString(address))
                    .containsEntry("notify_endpoint", "127.0.0.1:" + loader.tcpPort());
            assertThatThrownBy(() -> loader.createReceiveSegment("rx-te", MIB))
                    .isInstanceOfSatisfying(
                            DataplaneException.class,
                            e -> assertThat(e.error()).isEqualTo(DataplaneError.EXISTS));

            Dataplane peer = dp("node-b");
            Segment src = peer.createReceiveSegment("src", MIB);
            Patterns.fill(src.byteBuffer(), 0, 4096, 11);
            long before = loader.engine().registerNotify("gen-1/batch-0");
            try (TransferBatch batch =
                    peer.engine()
                            .submitWithNotify(
                                    List.of(write(src, 0, "rx-te", 0, 4096)), "gen-1/batch-0")) {
                batch.awaitSuccess(WAIT);
            }
            assertThat(loader.engine().awaitNotify("gen-1/batch-0", before + 1, WAIT))
                    .as("the publisher of the name counts the notify")
                    .isEqualTo(before + 1);
            in.println("dump");
            byte[] held = java.util.HexFormat.of().parseHex(out.readLine());
            ByteBuffer expected = ByteBuffer.allocate(4096);
            Patterns.fill(expected, 0, 4096, 11);
            assertThat(held).as("the worker's own memory").isEqualTo(expected.array());

            TestEngines.transfer(loader, TransferRequest.read(rx.readBack(), 0, "rx-te", 0, 4096));
            Patterns.assertHolds(rx.readBack().byteBuffer(), 0, 4096, 11);

            rx.close();
            assertThat(RedisSupport.hash(key("mc:seg:rx-te"))).isEmpty();
            assertThat(rx.readBack().shmPath()).doesNotExist();
            assertThatThrownBy(() -> TestEngines.transfer(peer, write(src, 0, "rx-te", 0, 16)))
                    .isInstanceOf(UnknownSegmentException.class);
        } finally {
            plain.destroyForcibly().waitFor();
        }
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
}
