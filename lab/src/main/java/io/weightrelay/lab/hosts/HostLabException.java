package io.weightrelay.lab.hosts;

/** The multi-host lab could not be set up, run or removed; the message says what and why. */
public final class HostLabException extends RuntimeException {

    public HostLabException(String message) {
        super(message);
    }

    public HostLabException(String message, Throwable cause) {
        super(message, cause);
    }
}
