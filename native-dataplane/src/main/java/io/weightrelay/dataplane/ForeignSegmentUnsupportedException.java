package io.weightrelay.dataplane;

/**
 * {@link Dataplane#attachForeignSegment} on an engine that cannot write into another Transfer
 * Engine's memory: the built-in engine speaks only its own protocol, so a buffer a worker
 * registered with Mooncake's Transfer Engine is reachable only from the Mooncake engine. Nothing
 * was published.
 */
public final class ForeignSegmentUnsupportedException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public ForeignSegmentUnsupportedException(String segment, ForeignBuffer buffer) {
        super(
                DataplaneError.INVALID_ARGUMENT,
                segment,
                "segment '"
                        + segment
                        + "' names memory of the Mooncake Transfer Engine at "
                        + buffer.engineSegment()
                        + ", which only the Mooncake engine (relay.dataplane.engine=mooncake)"
                        + " writes into");
    }
}
