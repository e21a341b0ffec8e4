package io.weightrelay.dataplane;

/**
 * Status codes of the data plane, those of the C API ({@code DP_ERR_*} in {@code dp.h}, checked by
 * NativeErrorCodesTest against the table the library exports). Per range results of {@link
 * StoreClient#getIntoRanges} carry {@link #code()} as a negative value.
 */
public enum DataplaneError {
    INVALID_ARGUMENT(-1),
    UNKNOWN_SEGMENT(-2),
    OUT_OF_BOUNDS(-3),
    UNREGISTERED_BUFFER(-4),
    PEER_GONE(-5),
    SHORT_TRANSFER(-6),
    SEGMENT_FULL(-7),
    TIMEOUT(-8),
    IO(-9),
    EXISTS(-10),
    NOT_FOUND(-11),
    CLOSED(-12),
    INTERNAL(-13),
    /**
     * Authentication failed, or the role may not do this (allocate or free in another's segment).
     */
    DENIED(-14),
    /** A segment of the same node label but another host identity: never mapped. */
    FOREIGN_HOST(-15),
    /**
     * A peer answered out of protocol: a reply status that is neither success nor a refusal a
     * server sends (a positive value, an unknown code). The connection was dropped.
     */
    PROTOCOL(-16),
    /**
     * A store segment refused a WRITE from a connection of role peer: store capacity takes writes
     * only from its owner, a storer or a remover; peers write only into receive segments.
     */
    READ_ONLY(-17),
    /**
     * The request named another incarnation of the segment than its owner has now: the owner
     * created it again under the same name (a loader registered its receive buffers again) since
     * the descriptor was read. Nothing was read or written; the descriptor must be read again.
     */
    STALE_SEGMENT(-18),
    /** The batch was cancelled ({@link TransferBatch#cancel}) before this transfer moved. */
    CANCELLED(-19);

    private final int code;

    DataplaneError(int code) {
        this.code = code;
    }

    /** The negative code used by the C API and in per-range results. */
    public int code() {
        return code;
    }

    /** The error for a negative code; {@link #INTERNAL} for codes this version does not know. */
    public static DataplaneError fromCode(long code) {
        for (DataplaneError e : values()) {
            if (e.code == code) {
                return e;
            }
        }
        return INTERNAL;
    }
}
