package io.weightrelay.dataplane;

/**
 * A segment descriptor read from the metadata store was refused before anything was mapped or
 * connected: its shared-memory path does not name the segment's own file, leaves this engine's shm
 * directory ({@code ..}, another directory), or is a symbolic link or not a regular file. Whoever
 * can write Redis could otherwise point an engine at any file it can open. The refusal is logged
 * and the read or write that needed the segment fails with this exception.
 */
public final class InvalidDescriptorException extends SegmentException {
    private static final long serialVersionUID = 1L;

    private final String shmPath;

    public InvalidDescriptorException(String segment, String shmPath, String message) {
        super(DataplaneError.DENIED, segment, message);
        this.shmPath = shmPath;
    }

    /** The path the descriptor named. */
    public String shmPath() {
        return shmPath;
    }
}
