package io.weightrelay.dataplane;

/**
 * A data-plane method the Mooncake engine does not provide: Mooncake has no equivalent (in-place
 * publish, CRC32C taken while moving bytes, byte counters per transport, memory of this JVM shared
 * with another process), or weight-relay does not drive it through the agent yet. {@link #method()}
 * names the interface method, the message says why and what to use instead. Nothing was done.
 */
public final class MooncakeUnsupportedException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    private final String method;

    public MooncakeUnsupportedException(String method, String reason) {
        super(
                DataplaneError.INVALID_ARGUMENT,
                method,
                method + " is not supported by the Mooncake engine: " + reason);
        this.method = method;
    }

    /** The interface method that was called, such as {@code StoreClient.publishInPlace}. */
    public String method() {
        return method;
    }
}
