package io.weightrelay.dataplane;

/** A put of a key that is already published (objects are immutable). */
public final class ObjectExistsException extends ObjectKeyException {
    private static final long serialVersionUID = 1L;

    /** With a message that names the key: the engine's, or the store client's own. */
    public ObjectExistsException(String key, String message) {
        super(DataplaneError.EXISTS, key, message);
    }
}
