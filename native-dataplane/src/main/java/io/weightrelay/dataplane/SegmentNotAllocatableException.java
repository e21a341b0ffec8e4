package io.weightrelay.dataplane;

/**
 * A put named a {@link SegmentKind#RECEIVE receive segment} as a preferred segment: such a segment
 * is a transfer target only, never store capacity. Nothing was allocated or published.
 */
public final class SegmentNotAllocatableException extends SegmentException {
    private static final long serialVersionUID = 1L;

    public SegmentNotAllocatableException(String segment, String key) {
        super(
                DataplaneError.INVALID_ARGUMENT,
                segment,
                "segment '"
                        + segment
                        + "' is a receive segment (transfer target only, not store capacity);"
                        + " it cannot hold object '"
                        + key
                        + "'");
    }
}
