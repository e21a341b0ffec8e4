package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.common.model.Nic;
import io.weightrelay.api.common.model.Node;
import io.weightrelay.api.common.model.Topology;
import io.weightrelay.control.redis.StoredRoundTrip;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A generation's stored trainer topology, spelled out: the JSON in Redis is ours, so a change of
 * the contract's {@code Topology} must not move a character of it.
 */
class StoredTopologyTest {

    private static final String KEY = "wr:gen:llama:3";

    /** Format 1, as this release writes it. */
    static final String GOLDEN =
            "{\"format\":1,\"nodes\":[{\"name\":\"t0\",\"nics\":[{\"name\":\"eth0\",\"gbps\":400.0},"
                    + "{\"name\":\"eth1\",\"gbps\":200.0}]},"
                    + "{\"name\":\"t1\",\"nics\":[{\"name\":\"eth0\",\"gbps\":400.0}]}]}";

    /** What releases before formats wrote: the generated {@code Topology}'s JSON. */
    static final String BEFORE_FORMATS =
            "{\"nodes\":[{\"name\":\"t0\",\"nics\":[{\"name\":\"eth0\",\"gbps\":400.0},"
                    + "{\"name\":\"eth1\",\"gbps\":200.0}]},"
                    + "{\"name\":\"t1\",\"nics\":[{\"name\":\"eth0\",\"gbps\":400.0}]}]}";

    private final StoredRoundTrip<StoredTopology, Topology> trip =
            new StoredRoundTrip<>(
                    StoredTopology.class, KEY, StoredTopology::read, StoredTopology::toApi);

    private static Topology topology() {
        return new Topology(
                List.of(
                        new Node("t0", List.of(new Nic("eth0", 400.0), new Nic("eth1", 200.0))),
                        new Node("t1", List.of(new Nic("eth0", 400.0)))));
    }

    @Test
    void writesTheGoldenJson() {
        trip.writes(StoredTopology.of(topology()), GOLDEN);
    }

    @Test
    void readsWhatItWrites() {
        StoredTopology read = trip.readsBack(GOLDEN, StoredTopology.of(topology()), topology());
        assertThat(read.format()).isEqualTo(StoredTopology.FORMAT);
    }

    @Test
    void readsWhatReleasesBeforeFormatsWrote() {
        trip.readsBeforeFormats(BEFORE_FORMATS, topology());
    }

    @Test
    void refusesANewerFormatNamingKeyAndFormat() {
        trip.refuses("{\"format\":2,\"nodes\":{\"moved\":true}}", 2)
                .hasMessageContaining("reads formats up to 1");
        trip.refuses("{\"format\":2,\"nodes\":[]}", 2);
    }
}
