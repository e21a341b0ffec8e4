package io.weightrelay.dataplane;

/** An offset and length that do not fit the segment, object or local memory they address. */
public final class OutOfBoundsException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    private final String target;

    public OutOfBoundsException(String target, long offset, long length, long size) {
        super(
                DataplaneError.OUT_OF_BOUNDS,
                "range ["
                        + offset
                        + ", "
                        + offset
                        + " + "
                        + length
                        + ") outside "
                        + target
                        + " of "
                        + size
                        + " bytes");
        this.target = target;
    }

    /** The segment, object key or local memory the range was checked against. */
    public String target() {
        return target;
    }
}
