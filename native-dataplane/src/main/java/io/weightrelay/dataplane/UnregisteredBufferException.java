package io.weightrelay.dataplane;

/** Local memory that is not (or no longer) registered with the engine. */
public final class UnregisteredBufferException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public UnregisteredBufferException(String what) {
        super(
                DataplaneError.UNREGISTERED_BUFFER,
                "local memory not registered with the engine: " + what);
    }

    private UnregisteredBufferException(String message, DataplaneError error) {
        super(error, message);
    }

    /** With the engine's message, which says which memory and why. */
    static UnregisteredBufferException because(String message) {
        return new UnregisteredBufferException(message, DataplaneError.UNREGISTERED_BUFFER);
    }
}
