package io.weightrelay.dataplane;

/**
 * Builds the exception family's members by status code: from a failed native call, with the
 * engine's message, and for the failures Java finds itself, with this library's own.
 */
final class Errors {
    private Errors() {}

    /**
     * The exception for a failed native call: the subclass of its code, with the engine's message;
     * {@code subject} (the segment or key) is what the exception's accessor returns.
     */
    static DataplaneException of(NativeStatus status, String subject) {
        String m = status.message().isEmpty() ? subject : status.message();
        return of(status.error(), subject, m);
    }

    /**
     * The exception for a failure Java found before asking the engine: the key {@code subject}
     * already published ({@code EXISTS}) or without an object ({@code NOT_FOUND}), or no engine
     * serving the segment {@code subject} ({@code UNKNOWN_SEGMENT}).
     */
    static DataplaneException found(DataplaneError error, String subject) {
        String message =
                switch (error) {
                    case EXISTS -> "object '" + subject + "' already exists";
                    case NOT_FOUND -> "no object '" + subject + "'";
                    case UNKNOWN_SEGMENT -> "unknown segment '" + subject + "'";
                    default -> throw new IllegalArgumentException("not found in Java: " + error);
                };
        return of(error, subject, message);
    }

    private static DataplaneException of(DataplaneError error, String subject, String m) {
        return switch (error) {
            case UNKNOWN_SEGMENT -> new UnknownSegmentException(subject, m);
            case PEER_GONE -> new PeerGoneException(subject, m);
            case SEGMENT_FULL -> new SegmentFullException(m);
            case UNREGISTERED_BUFFER -> UnregisteredBufferException.because(m);
            case NOT_FOUND -> new ObjectNotFoundException(subject, m);
            case EXISTS -> new ObjectExistsException(subject, m);
            case CLOSED -> DataplaneClosedException.because(m);
            case DENIED ->
                    new PermissionDeniedException(subject, m + PermissionDeniedException.HINT);
            case FOREIGN_HOST -> new ForeignHostException(subject, m);
            case READ_ONLY -> new StoreSegmentWriteRefusedException(subject, m);
            case STALE_SEGMENT -> new StaleSegmentException(subject, m);
            default -> new DataplaneException(error, m);
        };
    }

    /** The exception for a failed transfer task, from its status as the engine reported it. */
    static DataplaneException forTask(
            NativeStatus status, TransferRequest r, long segmentSize, long bytes) {
        DataplaneError error = status.error();
        boolean localOutside =
                r.localOffset() < 0
                        || r.length() < 0
                        || r.localOffset() > r.local().size() - r.length();
        if (localOutside
                && (error == DataplaneError.OUT_OF_BOUNDS
                        || error == DataplaneError.UNREGISTERED_BUFFER)) {
            return new OutOfBoundsException(
                    r.local().describe(), r.localOffset(), r.length(), r.local().size());
        }
        return switch (error) {
            case OUT_OF_BOUNDS ->
                    new OutOfBoundsException(
                            "segment '" + r.segment() + "'",
                            r.segmentOffset(),
                            r.length(),
                            segmentSize);
            case UNREGISTERED_BUFFER ->
                    UnregisteredBufferException.because(
                            r.local().describe() + ": " + status.message());
            case SHORT_TRANSFER ->
                    new ShortTransferException(
                            r.op() + " of segment '" + r.segment() + "'", r.length(), bytes);
            default -> of(status, r.segment());
        };
    }
}
