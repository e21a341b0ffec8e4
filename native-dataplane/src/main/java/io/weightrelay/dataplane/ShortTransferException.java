package io.weightrelay.dataplane;

/** A transfer that moved fewer bytes than asked; never reported as success. */
public final class ShortTransferException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public ShortTransferException(String what, long expected, long actual) {
        super(
                DataplaneError.SHORT_TRANSFER,
                what + ": moved " + actual + " of " + expected + " bytes");
    }
}
