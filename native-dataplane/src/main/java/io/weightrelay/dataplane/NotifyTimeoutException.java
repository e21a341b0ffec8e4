package io.weightrelay.dataplane;

/** A wait on a notify counter that timed out before the counter reached its target. */
public final class NotifyTimeoutException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public NotifyTimeoutException(String name, long atLeast, long value) {
        super(
                DataplaneError.TIMEOUT,
                "notify counter '" + name + "' at " + value + ", waited for " + atLeast);
    }
}
