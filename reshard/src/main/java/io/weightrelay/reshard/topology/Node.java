package io.weightrelay.reshard.topology;

import java.util.Objects;

/**
 * One node.
 *
 * @param name node label, as workers and publishers name it
 * @param role trainer or rollout
 * @param nics NIC count
 * @param nicGbps bandwidth of each NIC, per direction (full duplex), in gigabits per second
 */
public record Node(String name, Role role, int nics, double nicGbps) {
    public Node {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(role, "role");
        if (nics < 1 || !(nicGbps > 0) || Double.isInfinite(nicGbps)) {
            throw new IllegalArgumentException(
                    "node " + name + ": needs NICs with positive bandwidth");
        }
    }

    /** Bytes per second of one NIC in one direction. */
    public double nicBytesPerSecond() {
        return nicGbps * 1e9 / 8;
    }
}
