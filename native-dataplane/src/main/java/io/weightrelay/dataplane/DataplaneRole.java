package io.weightrelay.dataplane;

import java.util.Locale;

/**
 * The roles a data-plane connection proves in its handshake (dp.h, {@code DP_ROLE_*}). Each has its
 * own key ({@link RoleKeys}); an engine connects as the role its configuration claims and accepts
 * the roles it holds keys of.
 */
public enum DataplaneRole {
    /** Reads, writes into receive segments, notifies: publishers and loaders. */
    PEER(1),
    /** Also frees allocations in segments of other engines, and writes there: control-api. */
    REMOVER(2),
    /**
     * Also has the owner of a store segment allocate in it, writes there and frees what its failed
     * puts allocated: a client-only publisher.
     */
    STORER(3);

    private final int wire;

    DataplaneRole(int wire) {
        this.wire = wire;
    }

    /** The role byte on the wire and in the key derivation. */
    public int wire() {
        return wire;
    }

    /** {@code peer}, {@code remover}, {@code storer}: how key files and messages name it. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The role a key file or property names ({@link #label()}, any case). */
    public static DataplaneRole ofLabel(String label) {
        for (DataplaneRole r : values()) {
            if (r.label().equalsIgnoreCase(label.trim())) {
                return r;
            }
        }
        throw new IllegalArgumentException(
                "unknown data-plane role '" + label + "' (peer, remover or storer)");
    }
}
