package io.weightrelay.trainer.client;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import java.util.List;
import java.util.Map;

/**
 * The trainer coordinator's side of a generation (control-api): open it with the manifest and the
 * trainer nodes, then commit it or abort it. Opening is idempotent by trainer step, so every
 * trainer node may call it and learns the same generation.
 */
public interface Coordinator {

    /** Opens (or re-joins) the generation of {@code trainerStep}. */
    OpenedGeneration open(SourceManifest manifest, List<String> trainerNodes, long trainerStep);

    /** Atomically checks completeness and activates the generation. */
    void commit(GenerationId generation);

    /** Aborts the generation and removes its objects; the previous generation stays active. */
    void abort(GenerationId generation, String reason);

    /**
     * An open generation and its publisher assignment.
     *
     * @param generation the generation number
     * @param nodeOfTensor tensor name to the trainer node that publishes it
     */
    record OpenedGeneration(long generation, Map<String, String> nodeOfTensor) {
        public OpenedGeneration {
            nodeOfTensor = Map.copyOf(nodeOfTensor);
        }
    }
}
