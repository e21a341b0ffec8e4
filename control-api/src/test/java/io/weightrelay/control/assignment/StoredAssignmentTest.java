package io.weightrelay.control.assignment;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.model.PublisherAssignment;
import io.weightrelay.api.control.model.TensorAssignment;
import io.weightrelay.control.redis.StoredRoundTrip;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A cached publisher assignment, spelled out: the JSON in Redis is ours, not the contract's. */
class StoredAssignmentTest {

    private static final String KEY = "wr:assignment:sha256:m:sha256:t";

    static final String GOLDEN =
            "{\"format\":1,\"manifestDigest\":\"sha256:m\",\"topologyDigest\":\"sha256:t\","
                    + "\"tensors\":[{\"tensor\":\"a.weight\",\"node\":\"t1\"},"
                    + "{\"tensor\":\"b.weight\",\"node\":\"t0\"}],"
                    + "\"bytesPerNode\":{\"t1\":300,\"t0\":200},\"balance\":1.2}";

    /** What releases before formats wrote: the generated {@code PublisherAssignment}'s JSON. */
    static final String BEFORE_FORMATS =
            "{\"manifestDigest\":\"sha256:m\",\"topologyDigest\":\"sha256:t\","
                    + "\"tensors\":[{\"tensor\":\"a.weight\",\"node\":\"t1\"},"
                    + "{\"tensor\":\"b.weight\",\"node\":\"t0\"}],"
                    + "\"bytesPerNode\":{\"t1\":300,\"t0\":200},\"balance\":1.2}";

    private final StoredRoundTrip<StoredAssignment, PublisherAssignment> trip =
            new StoredRoundTrip<>(
                    StoredAssignment.class, KEY, StoredAssignment::read, StoredAssignment::toApi);

    private static Map<String, Long> bytesPerNode() {
        Map<String, Long> bytes = new LinkedHashMap<>();
        bytes.put("t1", 300L);
        bytes.put("t0", 200L);
        return bytes;
    }

    private static StoredAssignment stored() {
        return new StoredAssignment(
                StoredAssignment.FORMAT,
                "sha256:m",
                "sha256:t",
                List.of(
                        new StoredAssignment.Tensor("a.weight", "t1"),
                        new StoredAssignment.Tensor("b.weight", "t0")),
                bytesPerNode(),
                1.2);
    }

    private static PublisherAssignment answered() {
        return new PublisherAssignment(
                "sha256:m",
                "sha256:t",
                List.of(
                        new TensorAssignment("a.weight", "t1"),
                        new TensorAssignment("b.weight", "t0")),
                bytesPerNode(),
                1.2);
    }

    @Test
    void writesTheGoldenJson() {
        trip.writes(stored(), GOLDEN);
    }

    @Test
    void readsWhatItWritesInNodeOrder() {
        StoredAssignment read = trip.readsBack(GOLDEN, stored(), answered());
        assertThat(read.toApi().getBytesPerNode().keySet()).containsExactly("t1", "t0");
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        trip.readsBeforeFormats(BEFORE_FORMATS, answered());
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        trip.refuses("{\"format\":2,\"tensors\":\"packed\"}", 2);
    }
}
