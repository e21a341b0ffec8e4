package io.weightrelay.loader.pipeline;

/**
 * A failure of the apply pipeline (or of its preparation) that names what failed: the object key
 * whose read fell short, or the worker (peer) whose write or notify did not arrive.
 */
public final class ApplyFailure extends RuntimeException {
    private final String failingPeer;

    public ApplyFailure(String failingPeer, String message, Throwable cause) {
        super(message, cause);
        this.failingPeer = failingPeer;
    }

    public ApplyFailure(String failingPeer, String message) {
        this(failingPeer, message, null);
    }

    /** The object key or worker id that failed. */
    public String failingPeer() {
        return failingPeer;
    }
}
