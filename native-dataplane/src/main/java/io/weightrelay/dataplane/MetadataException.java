package io.weightrelay.dataplane;

/** The metadata store (Redis) failed or holds an entry this version cannot read. */
public final class MetadataException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    public MetadataException(String what, Throwable cause) {
        super(DataplaneError.IO, what, cause);
    }
}
