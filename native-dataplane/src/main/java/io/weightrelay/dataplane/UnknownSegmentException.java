package io.weightrelay.dataplane;

/** A segment name that no engine has registered (or that its owner no longer serves). */
public final class UnknownSegmentException extends SegmentException {
    private static final long serialVersionUID = 1L;

    /**
     * With a message that names the segment: the engine's (naming its owner too), or Java's own.
     */
    public UnknownSegmentException(String segment, String message) {
        super(DataplaneError.UNKNOWN_SEGMENT, segment, message);
    }
}
