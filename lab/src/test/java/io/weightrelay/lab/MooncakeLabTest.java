package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TransferEngineBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.PlacedBuffer;
import io.weightrelay.lab.cluster.LabCatalog;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.cluster.MooncakeLab;
import io.weightrelay.lab.faults.MooncakeAgentKills;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.lab.rollout.ShmVerifier;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.plan.Demands;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestClassOrder;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The lab on the real Mooncake ({@code relay.dataplane.engine=mooncake}): the pinned wheel's {@code
 * mooncake_master} ({@link MooncakeLab}) and control-api, two publishers and four loaders as
 * separate JVMs, each running its Mooncake agent. Publishers stage and put each object into their
 * agent's mounted segment; loaders read it with {@code get_into_ranges} into their receive segments
 * and redistribute with Mooncake Transfer Engine writes. Two generations are published and updated
 * in each mode, every received byte checked against the trainer's, and the store read exactly once
 * per byte the placement needs (the loaders' Mooncake byte counters), so the second update also
 * runs after control-api retired the first generation's objects.
 *
 * <p>One master serves every test here, and every test takes turns on one lab per mode (tiny, four
 * instances x tp 2; {@link SharedTestLab}), each on the steps nobody published there yet: the plain
 * Transfer Engine worker first (a test class's own tests run before its nested ones), which
 * registers every engine with its own workers again when it is done; then per mode the updates, a
 * killed loader's restart, and a loader's Mooncake agent killed mid-apply (issue 47, {@link
 * MooncakeAgentKills}), which proves the lab usable again before it returns; a publisher's agent
 * killed after a commit comes last, on the compat lab. A test that fails stops the lab, so the next
 * one starts afresh.
 */
@TestClassOrder(ClassOrderer.OrderAnnotation.class)
class MooncakeLabTest {

    private static ServicesOnMooncake mooncake;

    @RegisterExtension static final SharedTestLab shared = new SharedTestLab();

    @BeforeAll
    static void startMaster() throws Exception {
        mooncake = ServicesOnMooncake.start();
    }

    @AfterAll
    static void stopMaster() throws Exception {
        shared.close();
        if (mooncake != null) {
            mooncake.close();
        }
    }

    /**
     * Issue 47, interoperability: one worker of a parameter-direct instance is a plain Python
     * process running Mooncake's own {@code mooncake.engine.TransferEngine} (as a vLLM or SGLang
     * worker does) and no weight-relay agent: it registers its receive memory with its engine
     * through the package's {@code register_receive_buffer} and declares it in the instance's
     * registration ({@code ReceiveBuffer.registration}: a {@code transferEngine} buffer). The
     * loaders' Mooncake engines push into it one-sided through the real product path (control-api's
     * plan, the loaders' reads, pushes and node relays, the landed proof), and every byte the
     * worker holds after each of two updates is checked against the published weights, from a dump
     * the worker wrote of its own memory.
     */
    @Test
    void aWorkerReceivingIntoItsOwnTransferEngineGetsEveryPushedByte() throws Exception {
        LabCluster lab = shared.lab(LabCluster.Spec.of("tiny", 4, 2, Mode.DIRECT));
        LabCatalog.LoaderSlot slot = lab.loaderSlots().get(0);
        List<WorkerPlacement> workers =
                RolloutEngine.workers(
                        lab.placement(), slot.rolloutInstance(), slot.node(), lab.manifest());
        WorkerPlacement plain = workers.get(0);
        List<Map<String, Object>> buffers = new ArrayList<>();
        for (ReceiveBuffer b : plain.getBuffers()) {
            buffers.add(Map.of("bufferId", b.getBufferId(), "size", b.getSize()));
        }
        Map<String, Object> wanted =
                Map.of("segment", plain.getWorkerId() + "-te", "buffers", buffers);
        List<String> cmd = new ArrayList<>(mooncake.lab().commandPrefix());
        cmd.addAll(
                List.of(
                        MooncakeLab.VENV.resolve("bin/python").toString(),
                        Path.of("src/test/resources/io/weightrelay/lab/plain_te_worker.py")
                                .toAbsolutePath()
                                .toString(),
                        JSON.writeValueAsString(wanted)));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("PYTHONPATH", Path.of("../python/src").toAbsolutePath().toString());
        pb.redirectError(lab.logs().resolve("plain-te-worker.log").toFile());
        Process worker = pb.start();
        try (BufferedReader out =
                        new BufferedReader(
                                new InputStreamReader(
                                        worker.getInputStream(), StandardCharsets.UTF_8));
                Writer in =
                        new OutputStreamWriter(worker.getOutputStream(), StandardCharsets.UTF_8)) {
            String line = out.readLine();
            assertThat(line).as("the plain worker's declared buffers").isNotNull();
            List<ReceiveBuffer> declared = new ArrayList<>();
            for (JsonNode b : JSON.readTree(line)) {
                JsonNode te = b.path("transferEngine");
                declared.add(
                        new ReceiveBuffer()
                                .bufferId(b.path("bufferId").asString())
                                .segment(b.path("segment").asString())
                                .size(b.path("size").asLong())
                                .transferEngine(
                                        new TransferEngineBuffer()
                                                .segment(te.path("segment").asString())
                                                .address(te.path("address").asLong())));
            }
            assertThat(declared).hasSameSizeAs(plain.getBuffers());
            plain.setBuffers(declared);
            RolloutEngine engine = lab.engines().get(0);
            engine.register(lab.spec().model(), "lab", slot.node(), slot.span(), workers);
            Set<String> foreign =
                    declared.stream().map(ReceiveBuffer::getSegment).collect(Collectors.toSet());

            Path dumps = Files.createTempDirectory(lab.logs(), "plain-te-worker-");
            for (int i = 0; i < 2; i++) {
                long generation = lab.publish(shared.nextStep());
                LabUpdate update = lab.updateAll().requireUpdated();
                Demands demands = Demands.of(lab.manifest(), lab.placement());
                assertThat(update.bytesReceived())
                        .as("delivery equals what the target placement stores")
                        .isEqualTo(demands.targetStoredBytes());
                // The store is read once per needed byte; the loader beside the plain worker also
                // reads back, over the network, what the worker received as a node delegate
                // before it copies it on (its transport counters count those reads too), never
                // more than the worker's memory.
                assertThat(update.storeBytesRead() - demands.storeBytes())
                        .as("network reads beyond the store's needed bytes")
                        .isBetween(0L, plainMemory(declared));
                in.write("dump " + dumps + "\n");
                in.flush();
                assertThat(out.readLine()).isEqualTo("dumped");
                InstanceStatus status = engine.status();
                for (PlacedBuffer b : status.getBuffers()) {
                    if (foreign.contains(b.getSegment())) {
                        assertThat(b.getShmPath())
                                .as("the loader holds no file of the worker's own memory")
                                .isNull();
                        b.setShmPath(dumps.resolve(b.getSegment()).toString());
                    }
                }
                ShmVerifier verifier =
                        new ShmVerifier(lab.manifest(), lab.spec().seed(), generation);
                assertThat(verifier.verify(onlyWorker(status, plain.getWorkerId())))
                        .as("bytes of the plain worker checked against the trainer's")
                        .isEqualTo(fragmentBytes(lab, plain));
                assertThat(verifier.verify(status)).as("the whole instance").isPositive();
                assertThat(lab.verify(lab.engines().get(1), generation))
                        .as("the other instance")
                        .isPositive();
                System.out.printf(
                        "mooncake plain Transfer Engine worker %s, generation %d: %d bytes"
                                + " verified%n",
                        plain.getWorkerId(), generation, fragmentBytes(lab, plain));
            }
        } finally {
            worker.destroyForcibly().waitFor();
        }
        // the direct tests below take this lab on: every engine registered with its own workers
        lab.reRegisterAll();
    }

    /** The bytes of the plain worker's memory: the end of its last packed buffer. */
    private static long plainMemory(List<ReceiveBuffer> declared) {
        long end = 0;
        for (ReceiveBuffer b : declared) {
            end = (end + 4095) / 4096 * 4096 + b.getSize();
        }
        return end;
    }

    /** {@code status} with only worker {@code id} and its buffers. */
    private static InstanceStatus onlyWorker(InstanceStatus status, String id) {
        return new InstanceStatus()
                .instanceId(status.getInstanceId())
                .model(status.getModel())
                .group(status.getGroup())
                .node(status.getNode())
                .epoch(status.getEpoch())
                .workers(
                        status.getWorkers().stream()
                                .filter(w -> w.getWorkerId().equals(id))
                                .toList())
                .buffers(
                        status.getBuffers().stream()
                                .filter(b -> b.getWorkerId().equals(id))
                                .toList());
    }

    /** The bytes of every fragment {@code w} registered: what it must hold after an update. */
    private static long fragmentBytes(LabCluster lab, WorkerPlacement w) {
        Map<String, Integer> elementBytes = new HashMap<>();
        lab.manifest().tensors().forEach(t -> elementBytes.put(t.name(), t.rolloutDtype().bytes()));
        long total = 0;
        for (var f : w.getFragments()) {
            long n = elementBytes.get(f.getTensor());
            for (long d : f.getShape()) {
                n *= d;
            }
            total += n;
        }
        return total;
    }

    /** Direct first, so that the compat lab still runs for {@link AfterEveryMode}. */
    static List<Mode> directThenCompat() {
        return List.of(Mode.DIRECT, Mode.COMPAT);
    }

    /** The tests of one mode, in order, on that mode's shared lab. */
    @Nested
    @Order(1)
    @ParameterizedClass
    @MethodSource("io.weightrelay.lab.MooncakeLabTest#directThenCompat")
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    class OnOneLabPerMode {

        @Parameter Mode mode;

        @Test
        @Order(1)
        void updatesOnMooncakeDeliverEveryByteReadingTheStoreOncePerNeededByte() throws Exception {
            LabCluster lab = shared.lab(LabCluster.Spec.of("tiny", 4, 2, mode));
            Demands demands = Demands.of(lab.manifest(), lab.placement());
            for (int i = 0; i < 2; i++) {
                long generation = lab.publish(shared.nextStep());
                LabUpdate update = lab.updateAll().requireUpdated();
                long verified = lab.verifyAll(generation);
                assertThat(verified).as("bytes checked against the trainer's").isPositive();
                Delivery.exactAndSinglePull(update, demands);
                System.out.printf(
                        "mooncake %s generation %d: received %d, verified %d, store read %d of %d"
                                + " needed (%.1f s)%n",
                        mode,
                        generation,
                        update.bytesReceived(),
                        verified,
                        update.storeBytesRead(),
                        demands.storeBytes(),
                        update.seconds());
            }
        }

        /**
         * Issue 47: a loader killed with SIGKILL comes back on Mooncake. Its successor takes over
         * the receive segments' names the dead one left in the directory (refused as another
         * engine's before), loads the active generation alone from the store with no republish, and
         * the next update of every instance, the restarted one included, delivers every byte.
         */
        @Test
        @Order(2)
        void aKilledLoaderRestartsLoadsTheActiveGenerationAndTheNextUpdateSucceeds()
                throws Exception {
            LabCluster lab = shared.lab(LabCluster.Spec.of("tiny", 4, 2, mode));
            long first = lab.publish(shared.nextStep());
            lab.updateAll().requireUpdated();
            assertThat(lab.verifyAll(first)).isPositive();

            RolloutEngine restarted = lab.restartInstance(0);
            lab.update(List.of(restarted)).requireUpdated();
            assertThat(lab.verify(restarted, first))
                    .as("the restarted instance loads the active generation with no republish")
                    .isPositive();

            lab.reRegisterAll();
            long second = lab.publish(shared.nextStep());
            LabUpdate update = lab.updateAll().requireUpdated();
            assertThat(lab.verifyAll(second))
                    .as("bytes checked against the trainer's")
                    .isPositive();
            Delivery.exactAndSinglePull(update, Demands.of(lab.manifest(), lab.placement()));
        }

        /**
         * Issue 47: a loader's Mooncake agent killed mid-apply (see {@link MooncakeAgentKills}).
         */
        @Test
        @Order(3)
        void aLoadersAgentKilledMidApplyFailsTheSessionNamingItAndTheNextUpdateSucceeds()
                throws Exception {
            MooncakeAgentKills.loaderAgentKilledMidApply(
                    shared.lab(LabCluster.Spec.of("tiny", 4, 2, mode)), shared::nextStep);
        }
    }

    /** Last, on the compat lab the tests above left running: the fault it leaves behind. */
    @Nested
    @Order(2)
    class AfterEveryMode {

        /**
         * Issue 47: a publisher's Mooncake agent killed after a commit (see {@link
         * MooncakeAgentKills}).
         */
        @Test
        void aPublishersAgentKilledAfterCommitLosesWhatItHeldAndTheNextPublishReachesEveryEngine()
                throws Exception {
            MooncakeAgentKills.publisherAgentKilledAfterCommit(
                    shared.lab(LabCluster.Spec.of("tiny", 4, 2, Mode.COMPAT)), shared::nextStep);
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();
}
