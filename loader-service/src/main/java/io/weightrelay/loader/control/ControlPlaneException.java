package io.weightrelay.loader.control;

/** control-api answered with an error, or could not be reached. */
public final class ControlPlaneException extends RuntimeException {
    private final int status;

    public ControlPlaneException(int status, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    /** HTTP status of the answer, 0 when control-api was not reached. */
    public int status() {
        return status;
    }
}
