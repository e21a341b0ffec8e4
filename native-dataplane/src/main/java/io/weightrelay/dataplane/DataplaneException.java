package io.weightrelay.dataplane;

/**
 * Root of every failure the data plane reports. Unchecked: callers catch the specific subclass they
 * can act on ({@link PeerGoneException}, {@link SegmentFullException}, ...). Each exception names
 * the key or segment it is about in its message and accessors: this class holds the status code and
 * that subject, and formats the message; {@link SegmentException} and {@link ObjectKeyException}
 * name the subject as a segment or a store key, and a subclass adds only its code. {@code Errors}
 * builds them all, from a native status or from a failure found in Java.
 */
public class DataplaneException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final DataplaneError error;
    private final String subject;

    public DataplaneException(DataplaneError error, String message) {
        this(error, null, message);
    }

    public DataplaneException(DataplaneError error, String message, Throwable cause) {
        super(format(error, message), cause);
        this.error = error;
        this.subject = null;
    }

    /**
     * A failure about one segment, key or peer: {@code message} is the engine's, or the subclass's
     * own when the failure was found in Java.
     */
    protected DataplaneException(DataplaneError error, String subject, String message) {
        super(format(error, message));
        this.error = error;
        this.subject = subject;
    }

    private static String format(DataplaneError error, String message) {
        return message + " [" + error + "]";
    }

    /** The status code behind this failure. */
    public DataplaneError error() {
        return error;
    }

    /** The segment, key or peer this failure is about; null for a failure about none of them. */
    public String subject() {
        return subject;
    }
}
