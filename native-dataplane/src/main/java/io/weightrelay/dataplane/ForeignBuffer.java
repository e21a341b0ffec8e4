package io.weightrelay.dataplane;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Memory another process registered with a Mooncake Transfer Engine of its own (a rollout worker
 * inside vLLM or SGLang), as its engine addresses it: the engine's segment name and the buffer's
 * address in that process. {@link Dataplane#attachForeignSegment} publishes it under a segment
 * name, so that writes addressed to that name land in it.
 *
 * @param engineSegment the worker's Transfer Engine segment, {@code host:rpc_port}
 * @param address the buffer's address in the worker's process, as it registered it
 */
public record ForeignBuffer(String engineSegment, long address) {
    private static final Pattern ENDPOINT = Pattern.compile("[^:\\s]{1,200}:[0-9]{1,5}");

    public ForeignBuffer {
        Objects.requireNonNull(engineSegment, "engineSegment");
        if (!ENDPOINT.matcher(engineSegment).matches()) {
            throw new IllegalArgumentException(
                    "a Transfer Engine segment is host:port, not '" + engineSegment + "'");
        }
        if (address < 0) {
            throw new IllegalArgumentException("a buffer's address is >= 0: " + address);
        }
    }
}
