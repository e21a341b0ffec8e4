package io.weightrelay.dataplane;

/** The engine that owns a segment died or stopped answering during a transfer. */
public final class PeerGoneException extends SegmentException {
    private static final long serialVersionUID = 1L;

    /** With the engine's message, which names the segment and its owner's address. */
    public PeerGoneException(String segment, String message) {
        super(DataplaneError.PEER_GONE, segment, message);
    }
}
