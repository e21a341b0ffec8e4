package io.weightrelay.control.assignment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.control.model.PublisherAssignment;
import io.weightrelay.api.control.model.TensorAssignment;
import io.weightrelay.service.problem.RelayException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

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

    private final JsonMapper json = JsonMapper.builder().build();

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
        assertThat(stored().write(json)).isEqualTo(GOLDEN);
    }

    @Test
    void readsWhatItWritesInNodeOrder() {
        StoredAssignment read = StoredAssignment.read(json, KEY, GOLDEN);
        assertThat(read).isEqualTo(stored());
        assertThat(read.toApi()).isEqualTo(answered());
        assertThat(read.toApi().getBytesPerNode().keySet()).containsExactly("t1", "t0");
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        StoredAssignment read = StoredAssignment.read(json, KEY, BEFORE_FORMATS);
        assertThat(read.format()).isZero();
        assertThat(read.toApi()).isEqualTo(answered());
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        assertThatThrownBy(
                        () ->
                                StoredAssignment.read(
                                        json, KEY, "{\"format\":2,\"tensors\":\"packed\"}"))
                .isInstanceOf(RelayException.class)
                .hasMessageContaining("Redis key " + KEY)
                .hasMessageContaining("StoredAssignment of format 2");
    }
}
