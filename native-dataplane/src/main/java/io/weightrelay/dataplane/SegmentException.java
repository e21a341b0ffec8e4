package io.weightrelay.dataplane;

/**
 * A failure about one segment, which {@link #segment()} names: it is unknown, its owner is gone,
 * its descriptor is refused, belongs to another host or names an earlier incarnation, or it cannot
 * hold objects.
 */
public abstract sealed class SegmentException extends DataplaneException
        permits ForeignHostException,
                InvalidDescriptorException,
                PeerGoneException,
                SegmentNotAllocatableException,
                StaleSegmentException,
                UnknownSegmentException {
    private static final long serialVersionUID = 1L;

    SegmentException(DataplaneError error, String segment, String message) {
        super(error, segment, message);
    }

    /** The segment this failure is about. */
    public String segment() {
        return subject();
    }
}
