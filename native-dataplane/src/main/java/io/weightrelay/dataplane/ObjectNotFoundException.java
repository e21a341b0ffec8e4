package io.weightrelay.dataplane;

/** A store key without a published object. */
public final class ObjectNotFoundException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    private final String key;

    public ObjectNotFoundException(String key) {
        super(DataplaneError.NOT_FOUND, "no object '" + key + "'");
        this.key = key;
    }

    /** With the engine's message, which names what was not found (or exists). */
    public ObjectNotFoundException(String key, String message) {
        super(DataplaneError.NOT_FOUND, message);
        this.key = key;
    }

    /** The store key. */
    public String key() {
        return key;
    }
}
