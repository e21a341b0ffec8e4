package io.weightrelay.dataplane;

/** A batch that did not finish within the caller's timeout (it keeps running). */
public final class TransferTimeoutException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public TransferTimeoutException(String what) {
        super(DataplaneError.TIMEOUT, what);
    }
}
