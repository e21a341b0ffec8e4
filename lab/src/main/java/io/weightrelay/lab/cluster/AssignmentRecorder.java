package io.weightrelay.lab.cluster;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.trainer.client.Coordinator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The lab trainer's coordinator, remembering which trainer node control-api assigned each tensor of
 * every generation it opened: the only record of which publisher stored which object (control-api
 * keeps no publisher per object), which the demo needs to ask whether each object landed in its own
 * publisher's segment. Thread safe.
 */
final class AssignmentRecorder implements Coordinator {

    private final Coordinator delegate;
    private final Map<Long, Map<String, String>> nodeOfTensor = new ConcurrentHashMap<>();

    AssignmentRecorder(Coordinator delegate) {
        this.delegate = delegate;
    }

    @Override
    public OpenedGeneration open(
            SourceManifest manifest, List<String> trainerNodes, long trainerStep) {
        OpenedGeneration opened = delegate.open(manifest, trainerNodes, trainerStep);
        nodeOfTensor.put(opened.generation(), opened.nodeOfTensor());
        return opened;
    }

    @Override
    public void commit(GenerationId generation) {
        delegate.commit(generation);
    }

    @Override
    public void abort(GenerationId generation, String reason) {
        delegate.abort(generation, reason);
    }

    /** Tensor name to trainer node for {@code generation}, if this lab's trainer opened it. */
    Map<String, String> nodeOfTensor(long generation) {
        Map<String, String> out = nodeOfTensor.get(generation);
        if (out == null) {
            throw new IllegalArgumentException(
                    "generation " + generation + " was not opened by this lab's trainer");
        }
        return out;
    }
}
