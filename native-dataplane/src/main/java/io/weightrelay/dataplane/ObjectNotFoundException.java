package io.weightrelay.dataplane;

/** A store key without a published object. */
public final class ObjectNotFoundException extends ObjectKeyException {
    private static final long serialVersionUID = 1L;

    /** With a message that names the key: the engine's, or the store client's own. */
    public ObjectNotFoundException(String key, String message) {
        super(DataplaneError.NOT_FOUND, key, message);
    }
}
