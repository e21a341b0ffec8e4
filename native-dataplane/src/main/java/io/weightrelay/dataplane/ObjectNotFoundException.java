package io.weightrelay.dataplane;

/** A store key without a published object. */
public final class ObjectNotFoundException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    private final String key;

    public ObjectNotFoundException(String key) {
        super(DataplaneError.NOT_FOUND, "no object '" + key + "'");
        this.key = key;
    }

    /** The store key. */
    public String key() {
        return key;
    }
}
