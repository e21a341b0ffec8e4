package io.weightrelay.dataplane;

/**
 * A transfer named an earlier incarnation of a segment: its owner created the segment again under
 * the same name (a loader registered its receive buffers again) after this engine read the
 * descriptor. The owner refused it, so nothing was read from or written into the new segment; the
 * cached descriptor is dropped and the next transfer reads it afresh.
 */
public final class StaleSegmentException extends SegmentException {
    private static final long serialVersionUID = 1L;

    public StaleSegmentException(String segment, String message) {
        super(DataplaneError.STALE_SEGMENT, segment, message);
    }
}
