package io.weightrelay.dataplane;

/**
 * A segment's descriptor names this engine's node label but another host identity: two hosts are
 * configured with the same label. The local transport would map a file of that name on this host,
 * which is not the segment; the engine refuses instead.
 */
public final class ForeignHostException extends SegmentException {
    private static final long serialVersionUID = 1L;

    /** With a message that names the segment and both hosts. */
    public ForeignHostException(String segment, String message) {
        super(DataplaneError.FOREIGN_HOST, segment, message);
    }
}
