package io.weightrelay.publisher.publish;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.api.control.client.model.RegisterObjectsRequest;
import io.weightrelay.api.control.client.model.RegisteredObject;
import io.weightrelay.api.publisher.client.OwnerApi;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointObject;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.api.publisher.client.model.PublishState;
import io.weightrelay.api.publisher.client.model.SegmentInfo;
import io.weightrelay.api.publisher.client.model.StagedTensor;
import io.weightrelay.api.publisher.client.model.TransportCounters;
import io.weightrelay.publisher.ExpectedFragments;
import io.weightrelay.publisher.TestControlApi;
import io.weightrelay.publisher.TestPublisherProperties;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.reshard.convert.Floats;
import io.weightrelay.reshard.convert.Fp8Reference;
import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.testkit.redis.RedisTestSupport;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.testkit.sim.SimulatedModel;
import io.weightrelay.trainer.client.PublishFailedException;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RelayCallException;
import io.weightrelay.trainer.client.TrainerSession;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.Ordered;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.context.TestContext;
import org.springframework.test.context.TestExecutionListener;
import org.springframework.test.context.TestExecutionListeners;
import org.springframework.web.client.RestClientResponseException;

/**
 * The whole publish path with the real parts: the trainer-side protocol library talks REST to the
 * running service and to control-api and writes into the service's shared-memory staging, the
 * service stores into a real data-plane segment whose directory lives in Redis and registers what
 * it stored with the real control-api ({@link TestControlApi}, a child JVM from its jar).
 *
 * <p>Run once per staging mode ({@link SegmentStagingPublishTest}, {@link FileStagingPublishTest}),
 * each with its own control-api, data-plane prefix and Spring context: a subclass names its mode
 * with {@link Staging}, and {@link ControlApiPerClass} starts its control-api before the context is
 * built. The context is closed after the class, before the class's control-api it heartbeats to;
 * then the class's keys are deleted.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
@TestExecutionListeners(
        listeners = PublishEndToEndTest.ControlApiPerClass.class,
        mergeMode = TestExecutionListeners.MergeMode.MERGE_WITH_DEFAULTS)
abstract class PublishEndToEndTest {

    static final String NODE = "node-e2e";
    static final long SEED = 42;
    static final long MAX_FRAGMENT = 64 << 10;

    /** The staging a subclass publishes through. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.TYPE)
    @interface Staging {
        /** {@code relay.staging.mode}: {@code segment} or {@code file}. */
        String mode();

        /** The store segment's size: room for the tests' active generations (and staging). */
        String segmentSize();
    }

    static TestControlApi controlApi;
    static String dataplanePrefix;
    static Staging staging;

    /**
     * Starts the class's control-api under a data-plane prefix of its own before anything else runs
     * for the class; stops it and deletes what it and the publisher stored under that prefix once
     * {@code @DirtiesContext} has closed the publisher's context: with the highest precedence its
     * before-class callback runs first and its after-class callback last.
     */
    static final class ControlApiPerClass implements TestExecutionListener, Ordered {
        @Override
        public int getOrder() {
            return Ordered.HIGHEST_PRECEDENCE;
        }

        @Override
        public void beforeTestClass(TestContext testContext) {
            staging = testContext.getTestClass().getAnnotation(Staging.class);
            String test = "publish-" + staging.mode();
            dataplanePrefix = RedisTestSupport.uniqueKeyPrefix(test);
            controlApi = TestControlApi.start(test, dataplanePrefix);
        }

        @Override
        public void afterTestClass(TestContext testContext) {
            if (controlApi != null) {
                controlApi.close();
                controlApi = null;
            }
            if (dataplanePrefix != null) {
                RedisTestSupport.deleteKeys(dataplanePrefix);
                dataplanePrefix = null;
            }
        }
    }

    /** The publisher's settings, for the class's staging and control-api. */
    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        TestPublisherProperties.registerUnder(
                registry, dataplanePrefix, NODE, staging.mode(), staging.segmentSize());
        registry.add("relay.segment.register", () -> "true");
        registry.add("relay.segment.heartbeat", () -> "200ms");
        registry.add("relay.publish.control-api-url", () -> controlApi.baseUrl());
        registry.add(
                "relay.publish.control-api-token", () -> TestPublisherProperties.TRAINER_TOKEN);
        registry.add(
                "relay.publish.owner-token", () -> TestPublisherProperties.SEGMENT_OWNER_TOKEN);
    }

    /**
     * Bytes the publisher's engine copies locally to store {@code stored} bytes: none when the
     * ranks wrote into the segment, one copy from a staging file.
     */
    static long expectedLocalCopy(long stored) {
        return staging.mode().equals("file") ? stored : 0;
    }

    @Value("${local.server.port}")
    int port;

    @Autowired SegmentOwner owner;

    PublisherClient publisher;

    @BeforeEach
    void connect() {
        publisher =
                PublisherClient.connect(
                        "http://127.0.0.1:" + port,
                        TestPublisherProperties.TRAINER_TOKEN,
                        Duration.ofSeconds(60));
    }

    TrainerSession session() {
        return new TrainerSession(
                controlApi.coordinator(MAX_FRAGMENT),
                Map.of(NODE, publisher),
                RankPublisher.Options.defaults());
    }

    /** Publishes the deterministic trainer's weights of {@code manifest} at {@code step}. */
    TrainerSession.Outcome publish(SourceManifest manifest, long step) {
        return session().publish(manifest, step, g -> new DeterministicWeights(SEED, g));
    }

    /** Publishes as {@link #publish} does, which must fail; the failure. */
    PublishFailedException publishFails(SourceManifest manifest, long step) {
        PublishFailedException e =
                catchThrowableOfType(PublishFailedException.class, () -> publish(manifest, step));
        assertThat(e).as("publish of " + manifest.model() + " fails").isNotNull();
        return e;
    }

    /** The tiny catalogued model, fp32 in the trainer, bf16 for rollout, small fragments. */
    static SourceManifest tinyFp32ToBf16(String model) {
        SourceManifest tiny = SimulatedModel.manifest("tiny", DType.F32, DType.BF16, MAX_FRAGMENT);
        return Fragmenter.fragment(model, tiny.tensors(), MAX_FRAGMENT);
    }

    static GenerationState state(String model, long generation) {
        return controlApi.generation(model, generation).getState();
    }

    @Test
    void storesEveryFragmentOnceLocallyWithTheConvertedBytes() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-convert");
        TransportCounters before = publisher.segment().getTransport();

        TrainerSession.Outcome outcome = publish(manifest, 0);

        long g = outcome.generation();
        Generation generation = controlApi.generation(manifest.model(), g);
        assertThat(generation.getState()).isEqualTo(GenerationState.ACTIVE);
        assertThat(generation.getObjectsExpected()).isEqualTo(manifest.fragments().size());
        assertThat(generation.getObjectsRegistered()).isEqualTo(manifest.fragments().size());
        assertThat(generation.getBytesExpected()).isEqualTo(manifest.totalBytes());
        assertThat(controlApi.generations().getActiveGeneration(manifest.model()).getGeneration())
                .isEqualTo(g);
        Map<String, RegisteredObject> registered =
                controlApi.registeredObjects(manifest.model(), g);
        assertThat(registered).hasSize(manifest.fragments().size());
        assertThat(manifest.fragments().size()).isGreaterThan(manifest.tensors().size());
        long stagedBytes = 0;
        for (StoredFragment f : manifest.fragments()) {
            String key = new GenerationId(manifest.model(), g).objectKey(f.fragment());
            ByteBuffer stored = owner.ownedBytes(key).orElseThrow(() -> new AssertionError(key));
            int expected = Checksums.crc32c(ExpectedFragments.bf16(manifest, f, SEED, g));
            assertThat(Checksums.crc32c(stored)).as(key).isEqualTo(expected);
            RegisteredObject object = registered.get(key);
            assertThat(object).as(key).isNotNull();
            assertThat(object.getSize()).as(key).isEqualTo(f.bytes());
            assertThat(object.getChecksum()).as(key).isEqualTo(Checksums.format(expected));
            assertThat(object.getSegments()).as(key).containsExactly(owner.segmentName());
            stagedBytes += f.bytes() * 2;
        }

        var status = publisher.status(new GenerationId(manifest.model(), g));
        assertThat(status.getState()).isEqualTo(PublishState.FINISHED);
        assertThat(status.getBytesStaged()).isEqualTo(stagedBytes);
        assertThat(status.getBytesConverted()).isEqualTo(manifest.totalBytes());
        assertThat(status.getBytesStoredLocal()).isEqualTo(manifest.totalBytes());
        assertThat(status.getBytesStoredRemote()).isZero();
        SegmentInfo after = publisher.segment();
        assertThat(after.getTransport().getTcpWritten()).isEqualTo(before.getTcpWritten());
        assertThat(after.getTransport().getTcpRead()).isEqualTo(before.getTcpRead());
        assertThat(after.getTransport().getLocalWritten() - before.getLocalWritten())
                .isEqualTo(expectedLocalCopy(manifest.totalBytes()));
    }

    /**
     * Block-FP8 weights (fp32 and bf16 in the trainer, ragged shapes, several bands a fragment) are
     * stored as E4M3 with their scale tensors as objects of their own, bit for bit what the
     * reference quantiser makes of the trainer's bytes; the trainer never sends a scale tensor.
     */
    @Test
    void storesBlockFp8WeightsAndTheirScalesAsTheReferenceMakesThem() {
        List<TensorSpec> trainer =
                List.of(
                        new TensorSpec(
                                "model.embed_tokens.weight",
                                Shape.of(64, 32),
                                DType.BF16,
                                DType.BF16),
                        new TensorSpec(
                                "l.0.q_proj.weight", Shape.of(300, 200), DType.F32, DType.BF16),
                        new TensorSpec(
                                "l.0.down_proj.weight", Shape.of(130, 300), DType.BF16, DType.BF16),
                        new TensorSpec("l.0.o_proj.weight", Shape.of(2, 2), DType.F32, DType.BF16));
        SourceManifest manifest =
                Fragmenter.fragment(
                        "e2e-fp8", Fp8BlockRule.defaults().apply(trainer), MAX_FRAGMENT);
        assertThat(manifest.fragments()).hasSizeGreaterThan(manifest.tensors().size());

        long g = publish(manifest, 0).generation();

        assertThat(state(manifest.model(), g)).isEqualTo(GenerationState.ACTIVE);
        Map<String, RegisteredObject> registered =
                controlApi.registeredObjects(manifest.model(), g);
        assertThat(registered).hasSize(manifest.fragments().size());
        Map<String, Integer> weightOfScale = BlockScales.weightOfScale(manifest.tensors());
        for (Map.Entry<String, Integer> e : weightOfScale.entrySet()) {
            int index = e.getValue();
            TensorSpec weight = manifest.tensors().get(index);
            Fp8Reference.Quantized want = Fp8Reference.quantize(trainerValues(weight, index, g));
            for (StoredFragment f : manifest.fragments()) {
                String key = new GenerationId(manifest.model(), g).objectKey(f.fragment());
                ByteBuffer expected;
                if (f.tensor().equals(weight.name())) {
                    expected = ByteBuffer.allocate(Math.toIntExact(f.bytes()));
                    for (long r = f.offset().dim(0);
                            r < f.offset().dim(0) + f.shape().dim(0);
                            r++) {
                        expected.put(want.codes()[(int) r]);
                    }
                } else if (f.tensor().equals(e.getKey())) {
                    expected =
                            ByteBuffer.allocate(Math.toIntExact(f.bytes()))
                                    .order(ByteOrder.LITTLE_ENDIAN);
                    for (long b = f.offset().dim(0);
                            b < f.offset().dim(0) + f.shape().dim(0);
                            b++) {
                        for (float scale : want.scaleInv()[(int) b]) {
                            expected.putFloat(scale);
                        }
                    }
                } else {
                    continue;
                }
                expected.flip();
                ByteBuffer stored =
                        owner.ownedBytes(key).orElseThrow(() -> new AssertionError(key));
                assertThat(stored).as(key).isEqualTo(expected);
                assertThat(registered.get(key).getChecksum())
                        .as(key)
                        .isEqualTo(Checksums.format(Checksums.crc32c(expected)));
            }
        }
        assertThat(weightOfScale).hasSize(3);
        // the embedding stays bf16, passed through
        StoredFragment embed = manifest.fragments().get(0);
        assertThat(
                        owner.ownedBytes(
                                        new GenerationId(manifest.model(), g)
                                                .objectKey(embed.fragment()))
                                .orElseThrow()
                                .remaining())
                .isEqualTo(64 * 32 * 2);
    }

    /** The trainer's values of a 2-D tensor, as the deterministic trainer writes them. */
    private static float[][] trainerValues(TensorSpec tensor, int index, long g) {
        int rows = (int) tensor.shape().dim(0);
        int cols = (int) tensor.shape().dim(1);
        int width = tensor.trainerDtype().bytes();
        ByteBuffer bytes = ByteBuffer.allocate(rows * cols * width).order(ByteOrder.LITTLE_ENDIAN);
        new DeterministicWeights(SEED, g).write(index, tensor, 0, bytes);
        float[][] out = new float[rows][cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                int at = (r * cols + c) * width;
                out[r][c] = width == 4 ? bytes.getFloat(at) : Floats.fromBf16(bytes.getShort(at));
            }
        }
        return out;
    }

    /**
     * control-api refuses the publisher's registrations: another publisher already registered other
     * bytes (another checksum) for one fragment of the step's generation, so registering the real
     * object is a 409 {@code object-conflict} (control-api's own rule, nothing simulated). The
     * trainer, which re-joins that generation by its step, must abort it.
     */
    @Test
    void aRefusingControlApiAbortsTheGeneration() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-refused");
        long opened =
                controlApi.coordinator(MAX_FRAGMENT).open(manifest, List.of(NODE), 0).generation();
        StoredFragment first = manifest.fragments().get(0);
        int realCrc = Checksums.crc32c(ExpectedFragments.bf16(manifest, first, SEED, opened));
        RegisteredObject rival =
                new RegisteredObject()
                        .key(new GenerationId(manifest.model(), opened).objectKey(first.fragment()))
                        .size(first.bytes())
                        .checksum(Checksums.format(realCrc ^ 1))
                        .segments(List.of("segment-rival"));
        controlApi
                .generations(TestPublisherProperties.TRAINER_TOKEN)
                .registerObjects(
                        manifest.model(),
                        opened,
                        new RegisterObjectsRequest().publisher("node-rival").addObjectsItem(rival));

        PublishFailedException e = publishFails(manifest, 0);
        assertThat(e.generation()).isEqualTo(opened);
        assertThat(e.getMessage()).contains("control-api-failed");
        assertThat(state(manifest.model(), opened)).isEqualTo(GenerationState.ABORTED);
        assertNoneStored(manifest, opened);
    }

    @Test
    void aBatchThatDoesNotMatchTheManifestIsRefusedBeforeAnyByteIsStored() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-mismatch");
        long g = controlApi.coordinator(MAX_FRAGMENT).open(manifest, List.of(NODE), 0).generation();
        TensorSpec embed = manifest.tensors().get(0);
        List<Long> shape = new ArrayList<>();
        for (long d : embed.shape().dims()) {
            shape.add(d);
        }

        var reservation = publisher.reserve(1 << 20, Duration.ofSeconds(5));
        StagedTensor wrongDtype =
                new StagedTensor()
                        .name(embed.name())
                        .dtype(Dtype.BF16)
                        .shape(shape)
                        .stagingOffset(reservation.getOffset())
                        .bytes(4096L)
                        .checksum("crc32c:00000000");
        assertThatThrownBy(
                        () ->
                                publisher.handOver(
                                        new GenerationId(manifest.model(), g),
                                        reservation.getReservationId(),
                                        List.of(wrongDtype)))
                .isInstanceOfSatisfying(
                        RelayCallException.class,
                        e -> {
                            assertThat(e.status()).isEqualTo(400);
                            assertThat(e.problemType()).isEqualTo("manifest-mismatch");
                        });

        var second = publisher.reserve(1 << 20, Duration.ofSeconds(5));
        StagedTensor cutsAFragment =
                wrongDtype
                        .dtype(Dtype.FP32)
                        .stagingOffset(second.getOffset())
                        .bytes(4096L)
                        .tensorOffset(0L);
        assertThatThrownBy(
                        () ->
                                publisher.handOver(
                                        new GenerationId(manifest.model(), g),
                                        second.getReservationId(),
                                        List.of(cutsAFragment)))
                .isInstanceOfSatisfying(
                        RelayCallException.class,
                        e -> {
                            assertThat(e.problemType()).isEqualTo("manifest-mismatch");
                            assertThat(e.getMessage()).contains("fragment boundaries");
                        });
        assertNoneStored(manifest, g);
        assertThat(controlApi.generation(manifest.model(), g).getObjectsRegistered()).isZero();
    }

    /**
     * A part without the rank's CRC32C (as the Python client sent every part) is refused before a
     * byte is touched, naming the tensor: otherwise what a broken copy left in staging is what gets
     * published, with a checksum taken of it.
     */
    @Test
    void aPartWithoutItsChecksumIsRefusedNamingTheTensor() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-no-checksum");
        long g = controlApi.coordinator(MAX_FRAGMENT).open(manifest, List.of(NODE), 0).generation();
        TensorSpec tensor =
                manifest.tensors().stream()
                        .min(java.util.Comparator.comparingLong(t -> t.shape().numel()))
                        .orElseThrow();
        List<Long> shape = new ArrayList<>();
        for (long d : tensor.shape().dims()) {
            shape.add(d);
        }
        long bytes = tensor.shape().numel() * 4;
        var reservation = publisher.reserve(bytes, Duration.ofSeconds(5));
        StagedTensor unchecked =
                new StagedTensor()
                        .name(tensor.name())
                        .dtype(Dtype.FP32)
                        .shape(shape)
                        .stagingOffset(reservation.getOffset())
                        .bytes(bytes);
        assertThatThrownBy(
                        () ->
                                publisher.handOver(
                                        new GenerationId(manifest.model(), g),
                                        reservation.getReservationId(),
                                        List.of(unchecked)))
                .isInstanceOfSatisfying(
                        RelayCallException.class,
                        e -> {
                            assertThat(e.status()).isEqualTo(400);
                            assertThat(e.problemType()).isEqualTo("tensor-checksum-required");
                            assertThat(e.getMessage()).contains("'" + tensor.name() + "'");
                        });
        assertNoneStored(manifest, g);
        assertThat(controlApi.generation(manifest.model(), g).getObjectsRegistered()).isZero();
    }

    @Test
    void registersItsSegmentAsAnOwner() throws InterruptedException {
        for (int i = 0; i < 100 && !listed(owner.segmentName()); i++) {
            Thread.sleep(100);
        }
        assertThat(controlApi.registry().listSegments())
                .filteredOn(s -> s.getSegment().equals(owner.segmentName()))
                .singleElement()
                .satisfies(
                        s -> {
                            assertThat(s.getNode()).isEqualTo(NODE);
                            assertThat(s.getEndpoint()).isEqualTo(owner.endpoint());
                            assertThat(s.getSize()).isEqualTo(owner.size());
                            assertThat(s.getAdminUrl()).isEqualTo("http://127.0.0.1:" + port);
                            assertThat(s.getAlive()).isTrue();
                        });
    }

    private static boolean listed(String segment) {
        return controlApi.registry().listSegments().stream()
                .anyMatch(s -> s.getSegment().equals(segment));
    }

    @Test
    void savesWhatItHoldsAndRestoresItAfterTheObjectsAreGone(@TempDir Path directory) {
        SourceManifest manifest = tinyFp32ToBf16("e2e-checkpoint");
        long g = publish(manifest, 0).generation();
        Map<String, Integer> crcs = new HashMap<>();
        for (StoredFragment f : manifest.fragments()) {
            String key = new GenerationId(manifest.model(), g).objectKey(f.fragment());
            crcs.put(key, Checksums.crc32c(owner.ownedBytes(key).orElseThrow()));
        }
        OwnerApi ownerApi = ownerTokenApi();
        OwnerCheckpointRequest request =
                checkpointRequest(manifest, g, directory)
                        .checksums(publishedChecksums(manifest, g));

        OwnerCheckpointResult saved = ownerApi.saveOwnedObjects(request);
        assertThat(saved.getObjects()).isEqualTo(manifest.fragments().size());
        assertThat(saved.getBytes()).isEqualTo(manifest.totalBytes());
        // One file, fsynced, every object at the offset the answer names.
        assertThat(saved.getFile()).isEqualTo(owner.segmentName() + ".bin");
        assertThat(directory.resolve(saved.getFile())).hasSize(manifest.totalBytes());
        assertThat(saved.getSaved()).hasSize(manifest.fragments().size());
        crcs.keySet().forEach(owner::remove);

        OwnerCheckpointResult restored =
                ownerApi.restoreOwnedObjects(request.checksums(null).objects(saved.getSaved()));
        assertThat(restored.getObjects()).isEqualTo(manifest.fragments().size());
        crcs.forEach(
                (key, crc) ->
                        assertThat(Checksums.crc32c(owner.ownedBytes(key).orElseThrow()))
                                .as(key)
                                .isEqualTo(crc));
    }

    @Test
    void aSaveWritesOnlyBytesThatMatchTheirPublishedChecksums(@TempDir Path directory) {
        SourceManifest manifest = tinyFp32ToBf16("e2e-checkpoint-corrupt");
        long g = publish(manifest, 0).generation();
        Map<String, String> published = publishedChecksums(manifest, g);
        OwnerApi ownerApi = ownerTokenApi();

        // No checksums to prove the bytes against: refused.
        OwnerCheckpointRequest bare = checkpointRequest(manifest, g, directory);
        assertThat(refusal(() -> ownerApi.saveOwnedObjects(bare), 400))
                .contains("/problems/checksums-required");

        // One byte flipped in the segment after publish: that object is never saved.
        StoredFragment victim =
                manifest.fragments().stream().filter(f -> f.bytes() > 0).findFirst().orElseThrow();
        String key = new GenerationId(manifest.model(), g).objectKey(victim.fragment());
        ByteBuffer bytes = owner.ownedBytes(key).orElseThrow();
        int at = (int) (victim.bytes() / 2);
        bytes.put(at, (byte) (bytes.get(at) ^ 0x5a));
        OwnerCheckpointRequest request =
                checkpointRequest(manifest, g, directory).checksums(published);
        assertThat(refusal(() -> ownerApi.saveOwnedObjects(request), 409))
                .contains("/problems/checkpoint-corrupt")
                .contains(key);
        // Nothing of the failed save is left on disk.
        assertThat(directory.resolve(owner.segmentName() + ".bin")).doesNotExist();
        // A restore that names no objects is refused.
        assertThat(refusal(() -> ownerApi.restoreOwnedObjects(bare), 400))
                .contains("/problems/objects-required");
    }

    /**
     * Saves while a byte toggles: a save that reads the segment twice (once to check, once to
     * write) wrote bytes it never checked in about one save of 30 here, so 150 catch it but for
     * about one run in 200.
     */
    private static final int SAVES_UNDER_RACE = 150;

    @Test
    void aSaveWritesExactlyTheBytesItChecked(@TempDir Path directory) throws Exception {
        SourceManifest manifest = tinyFp32ToBf16("e2e-checkpoint-race");
        long g = publish(manifest, 0).generation();
        Map<String, String> published = publishedChecksums(manifest, g);
        OwnerApi ownerApi = ownerTokenApi();
        StoredFragment victim =
                manifest.fragments().stream()
                        .max(java.util.Comparator.comparingLong(StoredFragment::bytes))
                        .orElseThrow();
        String key = new GenerationId(manifest.model(), g).objectKey(victim.fragment());
        ByteBuffer bytes = owner.ownedBytes(key).orElseThrow();
        int at = (int) (victim.bytes() / 2);
        byte original = bytes.get(at);
        // A byte of the segment changes under the save, back and forth, the whole time.
        java.util.concurrent.atomic.AtomicBoolean stop =
                new java.util.concurrent.atomic.AtomicBoolean();
        Thread toggler =
                new Thread(
                        () -> {
                            boolean flipped = false;
                            while (!stop.get()) {
                                flipped = !flipped;
                                bytes.put(at, flipped ? (byte) (original ^ 0x5a) : original);
                            }
                        });
        toggler.start();
        int saved = 0;
        int refused = 0;
        try {
            for (int i = 0; i < SAVES_UNDER_RACE; i++) {
                Path dir = directory.resolve("save-" + i);
                OwnerCheckpointRequest request =
                        checkpointRequest(manifest, g, dir).checksums(published);
                OwnerCheckpointResult result;
                try {
                    result = ownerApi.saveOwnedObjects(request);
                } catch (RestClientResponseException e) {
                    assertThat(e.getStatusCode().value())
                            .as(e.getResponseBodyAsString())
                            .isEqualTo(409);
                    assertThat(e.getResponseBodyAsString())
                            .contains("/problems/checkpoint-corrupt");
                    refused++;
                    continue;
                }
                saved++;
                // What a save answers it wrote is what it wrote: every object's bytes in the file
                // match the checksum it vouched for.
                byte[] file = Files.readAllBytes(dir.resolve(result.getFile()));
                for (OwnerCheckpointObject o : result.getSaved()) {
                    ByteBuffer written =
                            ByteBuffer.wrap(
                                    file,
                                    Math.toIntExact(o.getOffset()),
                                    Math.toIntExact(o.getSize()));
                    assertThat(Checksums.format(Checksums.crc32c(written)))
                            .as("save " + i + ", object " + o.getKey())
                            .isEqualTo(published.get(o.getKey()));
                }
            }
        } finally {
            stop.set(true);
            toggler.join();
            bytes.put(at, original);
        }
        assertThat(saved + refused).isEqualTo(SAVES_UNDER_RACE);
    }

    /** A checkpoint request for the generation into {@code directory}, without checksums. */
    private static OwnerCheckpointRequest checkpointRequest(
            SourceManifest manifest, long generation, Path directory) {
        return new OwnerCheckpointRequest()
                .model(manifest.model())
                .generation(generation)
                .directory(directory.toString());
    }

    /** The checksums control-api registered for the generation's objects, by key. */
    private static Map<String, String> publishedChecksums(
            SourceManifest manifest, long generation) {
        Map<String, String> published = new HashMap<>();
        controlApi
                .registeredObjects(manifest.model(), generation)
                .forEach((key, o) -> published.put(key, o.getChecksum()));
        return published;
    }

    /** Calls the owner API, which must refuse with {@code status}; the problem's body. */
    private static String refusal(ThrowingCallable call, int status) {
        RestClientResponseException e =
                catchThrowableOfType(RestClientResponseException.class, call);
        assertThat(e).as("refused").isNotNull();
        assertThat(e.getStatusCode().value()).isEqualTo(status);
        return e.getResponseBodyAsString();
    }

    private OwnerApi ownerTokenApi() {
        Endpoint publisher =
                Endpoint.of("http://127.0.0.1:" + port, TestPublisherProperties.OWNER_TOKEN);
        return new OwnerApi(RelayClients.of(publisher).publisher());
    }

    /** No fragment of the generation is stored, but for the keys in {@code except}. */
    void assertNoneStored(SourceManifest manifest, long generation, String... except) {
        List<String> skip = List.of(except);
        for (StoredFragment f : manifest.fragments()) {
            String key = new GenerationId(manifest.model(), generation).objectKey(f.fragment());
            if (!skip.contains(key)) {
                assertThat(owner.exists(key)).as(key).isFalse();
            }
        }
    }

    /** Every fragment of the generation is stored. */
    void assertAllStored(SourceManifest manifest, long generation) {
        for (StoredFragment f : manifest.fragments()) {
            String key = new GenerationId(manifest.model(), generation).objectKey(f.fragment());
            assertThat(owner.exists(key)).as(key).isTrue();
        }
    }
}
