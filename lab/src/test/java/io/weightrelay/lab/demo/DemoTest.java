package io.weightrelay.lab.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.cluster.LabCluster;
import org.junit.jupiter.api.Test;

/**
 * {@code ./relay demo}'s story on real services, with the tiny model: one lab whose instances serve
 * both modes at once (a compatibility and a parameter-direct instance on each rollout node, in one
 * rollout group), three generations, then one loader per mode restarted onto the active generation.
 * Every byte is checked, the store is read exactly once per needed byte in every update, and
 * publishing moved no byte over tcp.
 */
class DemoTest {

    @Test
    void oneLabServesBothModesThroughThreeGenerationsAndARestart() throws Exception {
        Demo.Report report = Demo.run(LabCluster.Spec.bothModes("tiny", 4, 2));

        assertThat(report.modeByInstance())
                .containsEntry("i0000", "compat")
                .containsEntry("i0001", "direct")
                .containsEntry("i0002", "compat")
                .containsEntry("i0003", "direct");
        assertThat(report.generations()).hasSize(3);
        assertThat(report.generations())
                .extracting(Demo.GenerationResult::generation)
                .isSorted()
                .doesNotHaveDuplicates();
        for (Demo.GenerationResult g : report.generations()) {
            assertThat(g.storeBytesRead())
                    .as("generation %d: single pull", g.generation())
                    .isEqualTo(g.storeBytesNeeded())
                    .isPositive();
            assertThat(g.bytesReceived())
                    .as("generation %d: delivery equals the target", g.generation())
                    .isEqualTo(g.targetStoredBytes());
            assertThat(g.bytesVerified()).isPositive();
            assertThat(g.publishTcpBytes()).as("publishing moves no network byte").isZero();
            assertThat(g.updateSecondsByMode()).containsOnlyKeys("compat", "direct");
        }
        assertThat(report.restart().instances()).containsExactly("i0000", "i0001");
        assertThat(report.restart().storeBytesRead())
                .as("each restarted instance reads what it needs, once")
                .isEqualTo(report.restart().storeBytesNeeded());
        assertThat(report.restart().bytesVerified()).isPositive();
        assertThat(report.minStoreReadRatio()).isEqualTo(1.0);
        assertThat(report.maxStoreReadRatio()).isEqualTo(1.0);
        assertThat(report.verified()).isTrue();
        assertThat(report.json())
                .contains("\"verified\":true")
                .contains("\"min_store_read_ratio\":1.0000")
                .contains("\"max_store_read_ratio\":1.0000")
                .contains("\"publish_tcp_bytes\":0")
                .contains("\"update_s_by_mode\":{\"compat\":[");
    }
}
