package io.weightrelay.dataplane;

/** Local memory that is not (or no longer) registered with the engine. */
public final class UnregisteredBufferException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public UnregisteredBufferException(String what) {
        super(
                DataplaneError.UNREGISTERED_BUFFER,
                "local memory not registered with the engine: " + what);
    }
}
