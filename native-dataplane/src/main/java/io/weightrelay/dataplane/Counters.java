package io.weightrelay.dataplane;

/**
 * Bytes moved by one engine since it opened, per transport and direction, counted by the engine
 * that initiated the transfer ({@code tcpServed*}: bytes this engine's server moved for peers).
 * "Publish moved no network bytes" is {@code tcpWritten == 0} on the publisher; "each stored byte
 * read once" is the sum of {@code localRead + tcpRead} over all loaders.
 */
public record Counters(
        long localRead,
        long localWritten,
        long tcpRead,
        long tcpWritten,
        long tcpServedRead,
        long tcpServedWritten) {

    /** The difference {@code this - earlier}, for measuring one operation. */
    public Counters minus(Counters earlier) {
        return new Counters(
                localRead - earlier.localRead,
                localWritten - earlier.localWritten,
                tcpRead - earlier.tcpRead,
                tcpWritten - earlier.tcpWritten,
                tcpServedRead - earlier.tcpServedRead,
                tcpServedWritten - earlier.tcpServedWritten);
    }

    /** Bytes this engine read, over both transports. */
    public long totalRead() {
        return localRead + tcpRead;
    }

    /** Bytes this engine sent or fetched over tcp as the initiator. */
    public long tcpTotal() {
        return tcpRead + tcpWritten;
    }
}
