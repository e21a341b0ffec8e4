package io.weightrelay.reshard.topology;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import io.weightrelay.reshard.codec.Digests;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** All nodes, sorted by name so the digest ignores the order they were listed in. */
public record Topology(List<Node> nodes) {
    private static final String MAGIC = "wr.topology.v1";

    public Topology {
        List<Node> sorted = new ArrayList<>(nodes);
        sorted.sort(Comparator.comparing(Node::name));
        for (int i = 1; i < sorted.size(); i++) {
            if (sorted.get(i).name().equals(sorted.get(i - 1).name())) {
                throw new IllegalArgumentException("duplicate node " + sorted.get(i).name());
            }
        }
        nodes = List.copyOf(sorted);
    }

    /** {@code trainer-0..T-1} and {@code rollout-0..R-1}, all with the same NICs. */
    public static Topology uniform(
            int trainerNodes, int rolloutNodes, int nicsPerNode, double nicGbps) {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < trainerNodes; i++) {
            nodes.add(new Node(trainerNodeName(i), Role.TRAINER, nicsPerNode, nicGbps));
        }
        for (int i = 0; i < rolloutNodes; i++) {
            nodes.add(new Node(rolloutNodeName(i), Role.ROLLOUT, nicsPerNode, nicGbps));
        }
        return new Topology(nodes);
    }

    public static String trainerNodeName(int index) {
        return String.format("trainer-%04d", index);
    }

    public static String rolloutNodeName(int index) {
        return String.format("rollout-%04d", index);
    }

    public List<Node> nodes(Role role) {
        return nodes.stream().filter(n -> n.role() == role).toList();
    }

    public Map<String, Node> byName() {
        Map<String, Node> map = new HashMap<>();
        for (Node n : nodes) {
            map.put(n.name(), n);
        }
        return map;
    }

    public byte[] encode() {
        ByteSink out = new ByteSink(64 + nodes.size() * 32);
        out.string(MAGIC).varInt(nodes.size());
        for (Node n : nodes) {
            out.string(n.name()).u8(n.role().ordinal()).varInt(n.nics());
            out.fixedLong(Double.doubleToLongBits(n.nicGbps()));
        }
        return out.toByteArray();
    }

    public String digest() {
        return Digests.sha256Hex(encode());
    }

    public static Topology decode(byte[] bytes) {
        return ByteSource.decode(bytes, MAGIC, in -> new Topology(in.list(Topology::decodeNode)));
    }

    private static Node decodeNode(ByteSource in) {
        return new Node(
                in.string(),
                in.ordinal(Role.values(), "role"),
                in.varInt(),
                Double.longBitsToDouble(in.fixedLong()));
    }
}
