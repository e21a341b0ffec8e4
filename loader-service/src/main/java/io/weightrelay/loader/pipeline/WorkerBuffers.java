package io.weightrelay.loader.pipeline;

import java.util.List;
import java.util.Objects;

/** The receive buffers of one worker, in registration order. */
public record WorkerBuffers(String workerId, List<BufferSpec> buffers) {
    public WorkerBuffers {
        Objects.requireNonNull(workerId, "workerId");
        buffers = List.copyOf(buffers);
        if (buffers.isEmpty()) {
            throw new IllegalArgumentException("worker " + workerId + " has no buffers");
        }
    }
}
