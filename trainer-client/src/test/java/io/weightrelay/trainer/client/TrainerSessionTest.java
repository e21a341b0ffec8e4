package io.weightrelay.trainer.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The coordinator's side when a publisher is gone: abort, a clear error, collectives kept. */
class TrainerSessionTest {

    /** Records what the coordinator was asked to do; assigns every tensor to one node. */
    private static final class RecordingCoordinator implements Coordinator {
        final List<String> calls = new ArrayList<>();
        final String node;

        RecordingCoordinator(String node) {
            this.node = node;
        }

        @Override
        public OpenedGeneration open(SourceManifest manifest, List<String> nodes, long step) {
            calls.add("open");
            Map<String, String> assignment = new HashMap<>();
            manifest.tensors().forEach(t -> assignment.put(t.name(), node));
            return new OpenedGeneration(7, assignment);
        }

        @Override
        public void commit(GenerationId generation) {
            calls.add("commit " + generation.generation());
        }

        @Override
        public void abort(GenerationId generation, String reason) {
            calls.add("abort " + generation.generation() + ": " + reason);
        }
    }

    @Test
    void aPublisherThatIsGoneAbortsTheGenerationWithAClearError() throws IOException {
        int deadPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            deadPort = s.getLocalPort();
        }
        SourceManifest manifest =
                Fragmenter.fragment(
                        "m",
                        List.of(
                                new TensorSpec("a", Shape.of(4, 4), DType.BF16, DType.BF16),
                                new TensorSpec("b", Shape.of(8), DType.BF16, DType.BF16)),
                        1 << 20);
        RecordingCoordinator coordinator = new RecordingCoordinator("node-0");
        PublisherClient gone =
                PublisherClient.connect(
                        "http://127.0.0.1:" + deadPort, null, Duration.ofSeconds(2));
        List<String> skipped = new ArrayList<>();
        TensorSource source =
                new TensorSource() {
                    @Override
                    public void write(int index, TensorSpec t, long offset, ByteBuffer target) {
                        throw new AssertionError("nothing can be staged on a dead publisher");
                    }

                    @Override
                    public void skip(int index, TensorSpec t) {
                        skipped.add(t.name());
                    }
                };
        TrainerSession session =
                new TrainerSession(
                        coordinator, Map.of("node-0", gone), RankPublisher.Options.defaults());

        assertThatThrownBy(() -> session.publish(manifest, 3, g -> source))
                .isInstanceOfSatisfying(
                        PublishFailedException.class,
                        e -> {
                            assertThat(e.generation()).isEqualTo(7);
                            assertThat(e.getMessage())
                                    .contains("aborted")
                                    .contains("node-0")
                                    .contains("no answer");
                        });
        assertThat(coordinator.calls).hasSize(2);
        assertThat(coordinator.calls.get(0)).isEqualTo("open");
        assertThat(coordinator.calls.get(1)).startsWith("abort 7: node-0: ");
        // The rank still walked every tensor, so its collectives stayed in step.
        assertThat(skipped).containsExactly("a", "b");
    }
}
