package io.weightrelay.dataplane;

/** A put of a key that is already published (objects are immutable). */
public final class ObjectExistsException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    private final String key;

    public ObjectExistsException(String key) {
        super(DataplaneError.EXISTS, "object '" + key + "' already exists");
        this.key = key;
    }

    /** With the engine's message, which names what was not found (or exists). */
    public ObjectExistsException(String key, String message) {
        super(DataplaneError.EXISTS, message);
        this.key = key;
    }

    /** The store key. */
    public String key() {
        return key;
    }
}
