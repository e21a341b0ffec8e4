package io.weightrelay.loader.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.DataplaneError;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How the read stage names a read that failed because its segment's owner is gone. */
class ReadStageTest {

    @Test
    void aReadWhoseOwnerIsGoneNamesTheSegment() {
        ApplyFailure f =
                ReadStage.ownerGone(
                        "tiny/6/w@0",
                        "read of tiny/6/w@0 at 0",
                        DataplaneError.PEER_GONE,
                        List.of("lab-run-trainer-0001"));
        assertThat(f.failingPeer()).isEqualTo("lab-run-trainer-0001");
        assertThat(f.getMessage())
                .contains("read of tiny/6/w@0 at 0 failed: PEER_GONE")
                .contains("the owner of segment lab-run-trainer-0001, which holds it, is gone");
    }

    @Test
    void withReplicasEverySegmentIsNamed() {
        ApplyFailure f =
                ReadStage.ownerGone(
                        "k", "read of k at 8", DataplaneError.TIMEOUT, List.of("s1", "s2"));
        assertThat(f.failingPeer()).isEqualTo("s1");
        assertThat(f.getMessage())
                .contains("the owners of segments s1, s2, which hold it, are gone");
    }

    @Test
    void anObjectNotFoundWhenLookedUpIsNamedItself() {
        ApplyFailure f =
                ReadStage.ownerGone("k", "read of k at 0", DataplaneError.PEER_GONE, List.of());
        assertThat(f.failingPeer()).isEqualTo("k");
        assertThat(f.getMessage()).contains("the owner of its segment is gone");
    }
}
