package io.weightrelay.dataplane;

/** A put of a key that is already published (objects are immutable). */
public final class ObjectExistsException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public ObjectExistsException(String key) {
        this(key, "object '" + key + "' already exists");
    }

    /** With the engine's message, which names the key. */
    public ObjectExistsException(String key, String message) {
        super(DataplaneError.EXISTS, key, message);
    }

    /** The store key. */
    public String key() {
        return subject();
    }
}
