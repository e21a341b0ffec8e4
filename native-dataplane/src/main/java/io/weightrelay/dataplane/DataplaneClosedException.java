package io.weightrelay.dataplane;

/** A call on a closed dataplane, engine view or handle. */
public final class DataplaneClosedException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public DataplaneClosedException(String what) {
        super(DataplaneError.CLOSED, what + " is closed");
    }

    private DataplaneClosedException(String message, DataplaneError error) {
        super(error, message);
    }

    /** With the engine's message, which says what was refused because the engine shut down. */
    static DataplaneClosedException because(String message) {
        return new DataplaneClosedException(message, DataplaneError.CLOSED);
    }
}
