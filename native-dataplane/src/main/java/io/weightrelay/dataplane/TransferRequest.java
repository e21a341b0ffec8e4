package io.weightrelay.dataplane;

import java.util.Objects;

/**
 * One one-sided transfer between local memory and (segment, offset).
 *
 * @param op {@link Op#READ}: segment to local memory; {@link Op#WRITE}: local memory to segment
 * @param local registered local memory of the submitting engine
 * @param localOffset offset in {@code local}
 * @param segment name of the remote (or own) segment
 * @param segmentOffset offset in the segment
 * @param length bytes to move
 */
public record TransferRequest(
        Op op,
        LocalMemory local,
        long localOffset,
        String segment,
        long segmentOffset,
        long length) {

    /** Direction of a transfer, seen from the submitting engine. */
    public enum Op {
        READ,
        WRITE
    }

    public TransferRequest {
        Objects.requireNonNull(op, "op");
        Objects.requireNonNull(local, "local");
        Objects.requireNonNull(segment, "segment");
    }

    public static TransferRequest read(
            LocalMemory into, long intoOffset, String segment, long segmentOffset, long length) {
        return new TransferRequest(Op.READ, into, intoOffset, segment, segmentOffset, length);
    }

    public static TransferRequest write(
            LocalMemory from, long fromOffset, String segment, long segmentOffset, long length) {
        return new TransferRequest(Op.WRITE, from, fromOffset, segment, segmentOffset, length);
    }
}
