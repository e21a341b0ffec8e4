package io.weightrelay.dataplane;

/** A store key without a published object. */
public final class ObjectNotFoundException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public ObjectNotFoundException(String key) {
        this(key, "no object '" + key + "'");
    }

    /** With the engine's message, which names the key. */
    public ObjectNotFoundException(String key, String message) {
        super(DataplaneError.NOT_FOUND, key, message);
    }

    /** The store key. */
    public String key() {
        return subject();
    }
}
