package io.weightrelay.dataplane;

/** A failure about one stored object, which {@link #key()} names: it exists, or it does not. */
public abstract sealed class ObjectKeyException extends DataplaneException
        permits ObjectExistsException, ObjectNotFoundException {
    private static final long serialVersionUID = 1L;

    ObjectKeyException(DataplaneError error, String key, String message) {
        super(error, key, message);
    }

    /** The store key. */
    public String key() {
        return subject();
    }
}
