package io.weightrelay.control.assignment;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.api.control.model.PublisherAssignment;
import io.weightrelay.api.control.model.TensorAssignment;
import io.weightrelay.control.redis.StoredJson;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * A publisher assignment as cached in Redis: the trainer node of every tensor, in manifest order,
 * and the bytes each node publishes. Field names are the contract's {@code PublisherAssignment}'s;
 * format 0, written before formats existed, is that class's JSON.
 */
public record StoredAssignment(
        @JsonSetter(nulls = Nulls.AS_EMPTY) int format,
        String manifestDigest,
        String topologyDigest,
        List<Tensor> tensors,
        Map<String, Long> bytesPerNode,
        double balance)
        implements StoredJson.Versioned {

    /** The format this control-api writes, and the newest it reads. */
    public static final int FORMAT = 1;

    public StoredAssignment {
        tensors = List.copyOf(tensors);
        // in trainer-node order, as computed
        bytesPerNode = Collections.unmodifiableMap(new LinkedHashMap<>(bytesPerNode));
    }

    /** A tensor and the trainer node that publishes it. */
    public record Tensor(String tensor, String node) {}

    public PublisherAssignment toApi() {
        List<TensorAssignment> out = new ArrayList<>(tensors.size());
        for (Tensor t : tensors) {
            out.add(new TensorAssignment(t.tensor(), t.node()));
        }
        return new PublisherAssignment(
                manifestDigest, topologyDigest, out, new LinkedHashMap<>(bytesPerNode), balance);
    }

    /** The assignment cached under {@code key}. */
    public static StoredAssignment read(JsonMapper json, String key, String text) {
        return StoredJson.read(json, key, text, StoredAssignment.class, FORMAT);
    }
}
