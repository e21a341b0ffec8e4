package io.weightrelay.publisher.publish;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.publisher.client.OwnerApi;
import io.weightrelay.api.publisher.client.invoker.ApiClient;
import io.weightrelay.api.publisher.client.model.Dtype;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointRequest;
import io.weightrelay.api.publisher.client.model.OwnerCheckpointResult;
import io.weightrelay.api.publisher.client.model.PublishState;
import io.weightrelay.api.publisher.client.model.SegmentInfo;
import io.weightrelay.api.publisher.client.model.StagedTensor;
import io.weightrelay.api.publisher.client.model.TransportCounters;
import io.weightrelay.publisher.TestPublisherProperties;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.convert.Floats;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.ObjectKeys;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.trainer.client.PublishFailedException;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RelayCallException;
import io.weightrelay.trainer.client.TrainerSession;
import io.weightrelay.trainer.sim.DeterministicWeights;
import io.weightrelay.trainer.sim.SimulatedTrainer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The whole publish path with the real parts: the trainer-side protocol library talks REST to the
 * running service and writes into its shared-memory staging, the service stores into a real
 * data-plane segment whose directory lives in Redis. Only control-api is in memory ({@link
 * InMemoryControlApi}, with control-api's rules).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class PublishEndToEndTest {

    private static final String NODE = "node-e2e";
    private static final long SEED = 42;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        TestPublisherProperties.register(registry, "publish-e2e", NODE);
        registry.add("relay.segment.register", () -> "true");
        registry.add("relay.segment.heartbeat", () -> "200ms");
    }

    @TestConfiguration
    static class ControlApiInMemory {
        @Bean
        @Primary
        InMemoryControlApi inMemoryControlApi() {
            return new InMemoryControlApi();
        }
    }

    @Value("${local.server.port}")
    int port;

    @Autowired InMemoryControlApi control;
    @Autowired SegmentOwner owner;

    private PublisherClient publisher;

    @BeforeEach
    void connect() {
        control.refuseRegistrations(false);
        publisher =
                PublisherClient.connect(
                        "http://127.0.0.1:" + port,
                        TestPublisherProperties.TRAINER_TOKEN,
                        Duration.ofSeconds(60));
    }

    private TrainerSession session() {
        return new TrainerSession(
                control, Map.of(NODE, publisher), RankPublisher.Options.defaults());
    }

    /** The tiny catalogued model, fp32 in the trainer, bf16 for rollout, small fragments. */
    private static SourceManifest tinyFp32ToBf16(String model) {
        SourceManifest tiny = SimulatedTrainer.manifest("tiny", DType.F32, DType.BF16, 64 << 10);
        return Fragmenter.fragment(model, tiny.tensors(), 64 << 10);
    }

    @Test
    void storesEveryFragmentOnceLocallyWithTheConvertedBytes() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-convert");
        TransportCounters before = publisher.segment().getTransport();

        TrainerSession.Outcome outcome =
                session().publish(manifest, 0, g -> new DeterministicWeights(SEED, g));

        long g = outcome.generation();
        assertThat(control.state(manifest.model(), g)).isEqualTo(InMemoryControlApi.State.ACTIVE);
        Map<String, ControlPlane.StoredObject> registered = control.registered(manifest.model(), g);
        assertThat(registered).hasSize(manifest.fragments().size());
        assertThat(manifest.fragments().size()).isGreaterThan(manifest.tensors().size());
        long stagedBytes = 0;
        for (StoredFragment f : manifest.fragments()) {
            String key = ObjectKeys.key(manifest.model(), g, f.fragment());
            ByteBuffer stored = owner.ownedBytes(key).orElseThrow(() -> new AssertionError(key));
            int expected = Checksums.crc32c(expectedBf16(manifest, f, g));
            assertThat(Checksums.crc32c(stored)).as(key).isEqualTo(expected);
            assertThat(registered.get(key).checksum()).isEqualTo(Checksums.format(expected));
            assertThat(registered.get(key).segment()).isEqualTo(owner.segmentName());
            stagedBytes += f.bytes() * 2;
        }

        var status = publisher.status(manifest.model(), g);
        assertThat(status.getState()).isEqualTo(PublishState.FINISHED);
        assertThat(status.getBytesStaged()).isEqualTo(stagedBytes);
        assertThat(status.getBytesConverted()).isEqualTo(manifest.totalBytes());
        assertThat(status.getBytesStoredLocal()).isEqualTo(manifest.totalBytes());
        assertThat(status.getBytesStoredRemote()).isZero();
        SegmentInfo after = publisher.segment();
        assertThat(after.getTransport().getTcpWritten()).isEqualTo(before.getTcpWritten());
        assertThat(after.getTransport().getTcpRead()).isEqualTo(before.getTcpRead());
        assertThat(after.getTransport().getLocalWritten() - before.getLocalWritten())
                .isEqualTo(manifest.totalBytes());
    }

    @Test
    void aGenerationWithAFailedPutIsAbortedAndNeverCommitted() {
        SourceManifest good = tinyFp32ToBf16("e2e-fail");
        long active =
                session().publish(good, 0, g -> new DeterministicWeights(SEED, g)).generation();

        // Larger than the free space of the only segment: some put finds no room anywhere.
        List<TensorSpec> tensors = new ArrayList<>(good.tensors());
        tensors.add(new TensorSpec("huge.weight", Shape.of(4096, 4096), DType.F32, DType.BF16));
        SourceManifest tooBig = Fragmenter.fragment(good.model(), tensors, 64 << 10);

        assertThatThrownBy(
                        () -> session().publish(tooBig, 1, g -> new DeterministicWeights(SEED, g)))
                .isInstanceOfSatisfying(
                        PublishFailedException.class,
                        e -> {
                            assertThat(e.getMessage()).contains("aborted").contains("store-failed");
                            long failed = e.generation();
                            assertThat(control.state(good.model(), failed))
                                    .isEqualTo(InMemoryControlApi.State.ABORTED);
                            assertThat(publisher.status(good.model(), failed).getState())
                                    .isEqualTo(PublishState.FAILED);
                            for (StoredFragment f : tooBig.fragments()) {
                                assertThat(
                                                owner.exists(
                                                        ObjectKeys.key(
                                                                good.model(),
                                                                failed,
                                                                f.fragment())))
                                        .isFalse();
                            }
                        });
        assertThat(control.state(good.model(), active)).isEqualTo(InMemoryControlApi.State.ACTIVE);
        for (StoredFragment f : good.fragments()) {
            assertThat(owner.exists(ObjectKeys.key(good.model(), active, f.fragment()))).isTrue();
        }
    }

    @Test
    void aRefusingControlApiAbortsTheGeneration() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-refused");
        control.refuseRegistrations(true);

        assertThatThrownBy(
                        () ->
                                session()
                                        .publish(
                                                manifest,
                                                0,
                                                g -> new DeterministicWeights(SEED, g)))
                .isInstanceOfSatisfying(
                        PublishFailedException.class,
                        e -> {
                            assertThat(e.getMessage()).contains("control-api-failed");
                            assertThat(control.state(manifest.model(), e.generation()))
                                    .isEqualTo(InMemoryControlApi.State.ABORTED);
                            for (StoredFragment f : manifest.fragments()) {
                                assertThat(
                                                owner.exists(
                                                        ObjectKeys.key(
                                                                manifest.model(),
                                                                e.generation(),
                                                                f.fragment())))
                                        .isFalse();
                            }
                        });
    }

    @Test
    void aBatchThatDoesNotMatchTheManifestIsRefusedBeforeAnyByteIsStored() {
        SourceManifest manifest = tinyFp32ToBf16("e2e-mismatch");
        long g = control.open(manifest, List.of(NODE), 0).generation();
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
                        .bytes(4096L);
        assertThatThrownBy(
                        () ->
                                publisher.handOver(
                                        manifest.model(),
                                        g,
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
                                        manifest.model(),
                                        g,
                                        second.getReservationId(),
                                        List.of(cutsAFragment)))
                .isInstanceOfSatisfying(
                        RelayCallException.class,
                        e -> {
                            assertThat(e.problemType()).isEqualTo("manifest-mismatch");
                            assertThat(e.getMessage()).contains("fragment boundaries");
                        });
        for (StoredFragment f : manifest.fragments()) {
            assertThat(owner.exists(ObjectKeys.key(manifest.model(), g, f.fragment()))).isFalse();
        }
    }

    @Test
    void registersItsSegmentAsAnOwner() throws InterruptedException {
        for (int i = 0; i < 100 && !control.segments().containsKey(owner.segmentName()); i++) {
            Thread.sleep(100);
        }
        assertThat(control.segments()).containsEntry(owner.segmentName(), NODE);
    }

    @Test
    void savesWhatItHoldsAndRestoresItAfterTheObjectsAreGone(@TempDir Path directory) {
        SourceManifest manifest = tinyFp32ToBf16("e2e-checkpoint");
        long g =
                session()
                        .publish(manifest, 0, gen -> new DeterministicWeights(SEED, gen))
                        .generation();
        Map<String, Integer> crcs = new HashMap<>();
        for (StoredFragment f : manifest.fragments()) {
            String key = ObjectKeys.key(manifest.model(), g, f.fragment());
            crcs.put(key, Checksums.crc32c(owner.ownedBytes(key).orElseThrow()));
        }
        OwnerApi ownerApi = operatorOwnerApi();
        OwnerCheckpointRequest request =
                new OwnerCheckpointRequest()
                        .model(manifest.model())
                        .generation(g)
                        .directory(directory.toString());

        OwnerCheckpointResult saved = ownerApi.saveOwnedObjects(request);
        assertThat(saved.getObjects()).isEqualTo(manifest.fragments().size());
        assertThat(saved.getBytes()).isEqualTo(manifest.totalBytes());
        crcs.keySet().forEach(owner::remove);

        OwnerCheckpointResult restored = ownerApi.restoreOwnedObjects(request);
        assertThat(restored.getObjects()).isEqualTo(manifest.fragments().size());
        crcs.forEach(
                (key, crc) ->
                        assertThat(Checksums.crc32c(owner.ownedBytes(key).orElseThrow()))
                                .as(key)
                                .isEqualTo(crc));
    }

    private OwnerApi operatorOwnerApi() {
        ApiClient client = new ApiClient();
        client.setBasePath("http://127.0.0.1:" + port);
        client.setBearerToken(TestPublisherProperties.OPERATOR_TOKEN);
        return new OwnerApi(client);
    }

    /** What the fragment must hold: the source bytes recomputed and converted by the reference. */
    private static ByteBuffer expectedBf16(SourceManifest manifest, StoredFragment f, long g) {
        int index = manifest.tensorIndex().get(f.tensor());
        TensorSpec tensor = manifest.tensors().get(index);
        long inner = tensor.shape().numel() / Math.max(1, tensor.shape().dim(0));
        long first = f.offset().dim(0) * inner;
        int elements = Math.toIntExact(f.shape().numel());
        ByteBuffer source = ByteBuffer.allocate(elements * 4).order(ByteOrder.LITTLE_ENDIAN);
        new DeterministicWeights(SEED, g).write(index, tensor, first * 4, source);
        ByteBuffer out = ByteBuffer.allocate(elements * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < elements; i++) {
            out.putShort(Floats.bf16(source.getInt(4 * i)));
        }
        return out.flip();
    }
}
