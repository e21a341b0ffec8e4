package io.weightrelay.loader.registration;

import static io.weightrelay.loader.registration.TestBytes.crc;
import static io.weightrelay.loader.registration.TestBytes.fill;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.ReplicateConfig;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.SegmentFullException;
import io.weightrelay.dataplane.SegmentKind;
import io.weightrelay.dataplane.SegmentNotAllocatableException;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.service.test.TestDataplane;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The loader's receive buffers and staging are transfer targets, never store capacity: a publisher
 * whose own segment is full must not store its objects in them (they hold the weights the engine is
 * about to read).
 */
class ReceiveSegmentRegistrarTest {
    private static final int MIB = 1 << 20;

    private final String prefix = RedisTestSupport.uniqueKeyPrefix("loader-registrar");
    private Dataplane trainer;
    private Dataplane loader;

    @BeforeEach
    void open() {
        trainer = TestDataplane.open("trainer-0", prefix);
        loader = TestDataplane.open("rollout-0", prefix);
    }

    @AfterEach
    void close() {
        loader.close();
        trainer.close();
        RedisTestSupport.deleteKeys(prefix);
    }

    @Test
    void receiveBuffersAndStagingAreNeverStoreCapacity() {
        RegistrationManager<Segment> registrations =
                new RegistrationManager<>(new ReceiveSegmentRegistrar(loader));
        Segment receive =
                registrations.acquire(new RegistrationKey(1, "i0", "w0", "recv-i0-w0", 2 * MIB));
        Segment staging =
                registrations.acquire(
                        new RegistrationKey(1, "i0", "staging", "staging-i0", 2 * MIB));
        assertThat(receive.kind()).isEqualTo(SegmentKind.RECEIVE);
        assertThat(staging.kind()).isEqualTo(SegmentKind.RECEIVE);
        fill(receive.byteBuffer(), 1);
        fill(staging.byteBuffer(), 2);
        long receiveCrc = crc(receive.byteBuffer());
        long stagingCrc = crc(staging.byteBuffer());

        Segment store = trainer.createSegment("publisher-trainer-0", MIB);
        Segment source = trainer.createReceiveSegment("publish-staging", MIB);
        fill(source.byteBuffer(), 3);
        ReplicateConfig own = ReplicateConfig.preferLocal(store.name());
        trainer.store().putFrom("m/1/a", source, 0, 768 * 1024, own);

        // The publisher's segment is full: the put fails instead of landing in loader memory.
        assertThatThrownBy(() -> trainer.store().putFrom("m/1/b", source, 0, 768 * 1024, own))
                .isInstanceOf(SegmentFullException.class);
        assertThatThrownBy(
                        () ->
                                trainer.store()
                                        .putFrom(
                                                "m/1/c",
                                                source,
                                                0,
                                                4096,
                                                ReplicateConfig.preferLocal(receive.name())))
                .isInstanceOfSatisfying(
                        SegmentNotAllocatableException.class,
                        e -> assertThat(e.segment()).isEqualTo("recv-i0-w0"));
        assertThat(trainer.store().exists("m/1/b")).isFalse();
        assertThat(crc(receive.byteBuffer())).isEqualTo(receiveCrc);
        assertThat(crc(staging.byteBuffer())).isEqualTo(stagingCrc);

        // Still a transfer target: a one-sided write from the trainer lands in the receive buffer.
        trainer.engine()
                .transfer(
                        List.of(TransferRequest.write(source, 0, receive.name(), MIB, MIB)),
                        Duration.ofSeconds(60));
        assertThat(crc(receive.byteBuffer(MIB, MIB))).isEqualTo(crc(source.byteBuffer()));

        assertThat(trainer.store().remove("m/1/a")).isTrue();
        assertThat(registrations.unregisterInstance("i0")).hasSize(2);
        assertThat(receive.shmPath()).doesNotExist();
    }
}
