package io.weightrelay.dataplane;

/** A segment name that no engine has registered (or that its owner no longer serves). */
public final class UnknownSegmentException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public UnknownSegmentException(String segment) {
        this(segment, "unknown segment '" + segment + "'");
    }

    /** With the engine's message, which names the segment (and its owner). */
    public UnknownSegmentException(String segment, String message) {
        super(DataplaneError.UNKNOWN_SEGMENT, segment, message);
    }

    /** The segment name. */
    public String segment() {
        return subject();
    }
}
