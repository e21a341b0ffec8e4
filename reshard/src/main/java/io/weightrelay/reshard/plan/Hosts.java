package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.topology.Node;
import java.util.List;

/**
 * Named hosts of a plan with their NIC count and speed: its rollout nodes ({@link Plan#nodes()}) or
 * its trainers ({@link Plan#trainers()}). NICs are numbered host by host, host 0's first, as
 * per-NIC loads are indexed. Immutable: the arrays never leave the instance.
 */
public final class Hosts {
    private final String[] names;
    private final int[] nics;
    private final double[] gbps;
    // nicFirst[h] is the number of host h's first NIC; the last entry counts every NIC.
    private final int[] nicFirst;

    Hosts(String[] names, int[] nics, double[] gbps) {
        this.names = names;
        this.nics = nics;
        this.gbps = gbps;
        nicFirst = new int[nics.length + 1];
        for (int h = 0; h < nics.length; h++) {
            nicFirst[h + 1] = nicFirst[h] + nics[h];
        }
    }

    /** The hosts of these topology nodes, in this order. */
    static Hosts of(List<Node> nodes) {
        int count = nodes.size();
        String[] names = new String[count];
        int[] nics = new int[count];
        double[] gbps = new double[count];
        for (int h = 0; h < count; h++) {
            names[h] = nodes.get(h).name();
            nics[h] = nodes.get(h).nics();
            gbps[h] = nodes.get(h).nicGbps();
        }
        return new Hosts(names, nics, gbps);
    }

    public int count() {
        return names.length;
    }

    public String name(int host) {
        return names[host];
    }

    public int nics(int host) {
        return nics[host];
    }

    /** Line rate of each of the host's NICs. */
    public double gbps(int host) {
        return gbps[host];
    }

    /** The number of the host's first NIC among the NICs of every host. */
    public int firstNic(int host) {
        return nicFirst[host];
    }

    /** How many NICs the hosts have together. */
    public int nicCount() {
        return nicFirst[nics.length];
    }

    void check(String what) {
        Columns.sameRows(names.length, what, nics, gbps);
    }

    void encode(ByteSink out) {
        Columns.strings(out, names);
        Columns.ints(out, nics);
        Columns.doubles(out, gbps);
    }

    static Hosts decode(ByteSource in) {
        return new Hosts(Columns.strings(in), Columns.ints(in), Columns.doubles(in));
    }
}
