package io.weightrelay.dataplane;

/** Maps native status codes to the exception family. */
final class Errors {
    private Errors() {}

    /** Throws the exception for a negative code; {@code subject} names the segment or key. */
    static void check(int code, String subject) {
        if (code < 0) {
            throw of(code, subject);
        }
    }

    static DataplaneException of(int code, String subject) {
        DataplaneError error = DataplaneError.fromCode(code);
        return switch (error) {
            case UNKNOWN_SEGMENT -> new UnknownSegmentException(subject);
            case PEER_GONE -> new PeerGoneException(subject);
            case SEGMENT_FULL -> new SegmentFullException("segment '" + subject + "' is full");
            case UNREGISTERED_BUFFER -> new UnregisteredBufferException(subject);
            case NOT_FOUND -> new ObjectNotFoundException(subject);
            case EXISTS -> new ObjectExistsException(subject);
            case CLOSED -> new DataplaneClosedException(subject);
            case DENIED -> new PermissionDeniedException(subject);
            case FOREIGN_HOST -> new ForeignHostException(subject);
            default -> new DataplaneException(error, subject);
        };
    }

    /** The exception for a failed transfer task. */
    static DataplaneException forTask(int code, TransferRequest r, long segmentSize, long bytes) {
        DataplaneError error = DataplaneError.fromCode(code);
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
            case UNREGISTERED_BUFFER -> new UnregisteredBufferException(r.local().describe());
            case SHORT_TRANSFER ->
                    new ShortTransferException(
                            r.op() + " of segment '" + r.segment() + "'", r.length(), bytes);
            default -> of(code, r.segment());
        };
    }
}
