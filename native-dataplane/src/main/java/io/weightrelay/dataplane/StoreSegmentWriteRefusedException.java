package io.weightrelay.dataplane;

/**
 * The owner of a store segment refused a write from this engine, which connects as role {@code
 * peer}: store capacity holds published objects and takes writes only from its owner, a storer it
 * allocated for, or a remover; peers (loaders) write only into receive segments. The server keeps
 * serving; nothing was written. {@link #subject()} is the segment.
 */
public final class StoreSegmentWriteRefusedException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public StoreSegmentWriteRefusedException(String segment, String message) {
        super(DataplaneError.READ_ONLY, segment, message);
    }
}
