package io.weightrelay.lab.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.cluster.LabCluster;
import org.junit.jupiter.api.Test;

/**
 * {@code ./relay demo --engine mooncake}'s story with the tiny model: every service on the real
 * Mooncake against a master of the pinned wheel in a namespace of its own (root, as CI runs), three
 * generations, every byte checked, the store read once per needed byte, every published object's
 * replica reported by the master in its own publisher's segment (the segments have room for it),
 * and two killed loaders restarted onto the active generation (they take over their dead owners'
 * segment names).
 */
class MooncakeDemoTest {

    @Test
    void theWholeStoryRunsOnMooncakeWithEveryReplicaInItsPublishersSegment() throws Exception {
        Demo.Report report =
                Demo.run(LabCluster.Spec.bothModes("tiny", 4, 2), DataplaneEngine.MOONCAKE);

        assertThat(report.generations()).hasSize(3);
        for (Demo.GenerationResult g : report.generations()) {
            assertThat(g.objectsLocated())
                    .as("generation %d: every object located", g.generation())
                    .isPositive();
            assertThat(g.objectsLocal())
                    .as("generation %d: in its own publisher's segment", g.generation())
                    .isEqualTo(g.objectsLocated());
        }
        // a killed loader comes back on Mooncake too: it takes over its dead owner's segments
        assertThat(report.restart().instances()).containsExactly("i0000", "i0001");
        assertThat(report.restart().storeBytesRead())
                .isEqualTo(report.restart().storeBytesNeeded());
        assertThat(report.restart().bytesVerified()).isPositive();
        assertThat(report.minStoreReadRatio()).isEqualTo(1.0);
        assertThat(report.maxStoreReadRatio()).isEqualTo(1.0);
        assertThat(report.localReplicaRatio()).isEqualTo(1.0);
        assertThat(report.verified()).isTrue();
        assertThat(report.json())
                .contains("\"engine\":\"mooncake\"")
                .contains("\"local_replica_ratio\":1.0000")
                .contains("\"restart_update_s\":")
                .contains("\"verified\":true");
    }
}
