package io.weightrelay.publisher.segment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.publisher.publish.ControlPlane;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.util.unit.DataSize;

/** The publisher's segment roles: what each accepts, and whom a client would store into. */
class SegmentRoleTest {

    private static SegmentProperties props(long bytes, String role) {
        return new SegmentProperties(
                "node-a",
                "seg-a",
                DataSize.ofBytes(bytes),
                true,
                null,
                Duration.ofSeconds(5),
                role);
    }

    @Test
    void aStorageUnitOwnsASegmentAndServesNoTrainer() {
        SegmentProperties unit = props(1 << 20, SegmentProperties.STORAGE_UNIT);
        assertThat(unit.ownsSegment()).isTrue();
        assertThat(unit.servesTrainers()).isFalse();
        SegmentProperties trainer = props(1 << 20, SegmentProperties.TRAINER);
        assertThat(trainer.ownsSegment()).isTrue();
        assertThat(trainer.servesTrainers()).isTrue();
    }

    @Test
    void aClientOnlyPublisherOwnsNoStoreMemoryAndServesTrainers() {
        SegmentProperties client = props(0, SegmentProperties.CLIENT);
        assertThat(client.ownsSegment()).isFalse();
        assertThat(client.servesTrainers()).isTrue();
    }

    @Test
    void badRolesAndSizesAreRefusedNamingWhy() {
        assertThatThrownBy(() -> props(1 << 20, "gpu"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("relay.segment.role")
                .hasMessageContaining("'gpu'");
        assertThatThrownBy(() -> props(1 << 20, SegmentProperties.CLIENT))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("relay.segment.size=0");
        assertThatThrownBy(() -> props(0, SegmentProperties.TRAINER))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("relay.segment.size is 0")
                .hasMessageContaining("relay.segment.role=client");
        assertThatThrownBy(() -> props(0, SegmentProperties.STORAGE_UNIT))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("relay.segment.size is 0");
    }

    @Test
    void unitsOfTheOwnNodeComeFirstThenTheOthersByName() {
        List<ControlPlane.SegmentPeer> units =
                List.of(
                        new ControlPlane.SegmentPeer("u-z", "node-b"),
                        new ControlPlane.SegmentPeer("u-b", "node-a"),
                        new ControlPlane.SegmentPeer("u-c", "node-c"),
                        new ControlPlane.SegmentPeer("u-a", "node-a"));
        assertThat(SegmentHeartbeat.unitOrder("node-a", units))
                .containsExactly("u-a", "u-b", "u-c", "u-z");
        assertThat(SegmentHeartbeat.unitOrder("node-x", units))
                .containsExactly("u-a", "u-b", "u-c", "u-z");
    }
}
