package io.weightrelay.service.dataplane;

/**
 * The {@code relay.dataplane.*} settings (or a URL derived from them) cannot work; the message
 * names the property to change. Thrown at start-up, so the service refuses to start.
 */
public final class DataplaneSettingsException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    public DataplaneSettingsException(String message) {
        super(message);
    }

    public DataplaneSettingsException(String message, Throwable cause) {
        super(message, cause);
    }
}
