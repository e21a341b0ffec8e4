package io.weightrelay.dataplane;

/** No room: a segment (or every candidate segment of a put) cannot hold the bytes. */
public final class SegmentFullException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public SegmentFullException(String what) {
        super(DataplaneError.SEGMENT_FULL, what);
    }
}
