package io.weightrelay.reshard.assign;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.topology.Topology;
import java.util.List;
import org.junit.jupiter.api.Test;

class PublisherAssignmentTest {
    @Test
    void balancesBytesAcrossTrainerNodesDeterministically() {
        SourceManifest m = Fragmenter.fragment("qwen", ModelCatalog.tensors("qwen2.5-0.5b"));
        Topology topology = Topology.uniform(4, 1, 8, 400);
        PublisherAssignment a = PublisherAssignment.assign(m, topology);

        assertThat(a).isEqualTo(PublisherAssignment.assign(m, topology));
        long total = 0;
        for (long b : a.bytesPerNode()) {
            total += b;
        }
        assertThat(total).isEqualTo(m.totalBytes());
        long largest = m.tensors().stream().mapToLong(TensorSpec::bytes).max().orElseThrow();
        // Largest-first greedy: no node exceeds the mean by more than one tensor.
        for (long b : a.bytesPerNode()) {
            assertThat(b).isLessThanOrEqualTo(total / 4 + largest);
        }
        assertThat(a.balance()).isGreaterThanOrEqualTo(1.0).isLessThan(1.3);
        assertThat(a.byTensorName(m)).hasSize(m.tensors().size());
        assertThat(a.trainerNodes())
                .containsExactlyElementsOf(
                        List.of("trainer-0000", "trainer-0001", "trainer-0002", "trainer-0003"));
    }
}
