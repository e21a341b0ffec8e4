package io.weightrelay.control.generation;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.api.common.model.Topology;
import io.weightrelay.control.redis.StoredJson;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;

/**
 * The trainer topology a generation was opened (or restored) with, as its hash keeps it in {@code
 * trainerTopology}: the nodes with their NICs, in the field names of the contract's {@code
 * Topology} (format 0, written before formats existed, is that class's JSON).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record StoredTopology(@JsonSetter(nulls = Nulls.AS_EMPTY) int format, List<Node> nodes)
        implements StoredJson.Versioned {

    /** The format this control-api writes, and the newest it reads. */
    public static final int FORMAT = 1;

    public StoredTopology {
        nodes = List.copyOf(nodes);
    }

    /** A trainer node and its NICs. */
    public record Node(String name, List<Nic> nics) {
        public Node {
            nics = List.copyOf(nics);
        }
    }

    /** A NIC and its bandwidth in Gbit/s. */
    public record Nic(String name, double gbps) {}

    public static StoredTopology of(Topology api) {
        List<Node> nodes = new ArrayList<>(api.getNodes().size());
        for (io.weightrelay.api.common.model.Node n : api.getNodes()) {
            List<Nic> nics = new ArrayList<>(n.getNics().size());
            for (io.weightrelay.api.common.model.Nic nic : n.getNics()) {
                nics.add(new Nic(nic.getName(), nic.getGbps()));
            }
            nodes.add(new Node(n.getName(), nics));
        }
        return new StoredTopology(FORMAT, nodes);
    }

    public Topology toApi() {
        List<io.weightrelay.api.common.model.Node> out = new ArrayList<>(nodes.size());
        for (Node n : nodes) {
            List<io.weightrelay.api.common.model.Nic> nics = new ArrayList<>(n.nics().size());
            for (Nic nic : n.nics()) {
                nics.add(new io.weightrelay.api.common.model.Nic(nic.name(), nic.gbps()));
            }
            out.add(new io.weightrelay.api.common.model.Node(n.name(), nics));
        }
        return new Topology(out);
    }

    /** The topology stored under {@code key} (a generation's hash). */
    public static StoredTopology read(JsonMapper json, String key, String text) {
        return StoredJson.read(json, key, text, StoredTopology.class, FORMAT);
    }
}
