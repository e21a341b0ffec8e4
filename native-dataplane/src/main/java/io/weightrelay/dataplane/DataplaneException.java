package io.weightrelay.dataplane;

/**
 * Root of every failure the data plane reports. Unchecked: callers catch the specific subclass they
 * can act on ({@link PeerGoneException}, {@link SegmentFullException}, ...). Each exception names
 * the key or segment it is about in its message and accessors.
 */
public class DataplaneException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final DataplaneError error;

    public DataplaneException(DataplaneError error, String message) {
        super(message + " [" + error + "]");
        this.error = error;
    }

    public DataplaneException(DataplaneError error, String message, Throwable cause) {
        super(message + " [" + error + "]", cause);
        this.error = error;
    }

    /** The status code behind this failure. */
    public DataplaneError error() {
        return error;
    }
}
