package io.weightrelay.dataplane;

/** A call on a closed dataplane, engine view or handle. */
public final class DataplaneClosedException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public DataplaneClosedException(String what) {
        super(DataplaneError.CLOSED, what + " is closed");
    }
}
