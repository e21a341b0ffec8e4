package io.weightrelay.lab.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.weightrelay.dataplane.DataplaneEngine;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./relay bench dataplane} on the built-in engine, in this JVM and between two hosts (root,
 * as CI runs), at its smallest (a few MiB, one measured round), so neither placement can rot: each
 * prints every field its help and the READMEs name, with values that hang together and its check
 * held. The Mooncake variant is {@link MooncakeBenchTest}'s.
 */
class DataplaneBenchTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String PREFIX = System.getProperty("relay.lab.prefix", "wr-dpbtest");

    private static DataplaneBench.Line run(long size, boolean hosts) throws Exception {
        return DataplaneBench.line(
                new DataplaneOptions(
                        size,
                        1,
                        "redis://127.0.0.1:6379",
                        2,
                        PREFIX,
                        hosts,
                        DataplaneEngine.BUILTIN));
    }

    @Test
    void oneHostMeasuresBothTransportsAndTheStoreAgainstMemcpyAndASocket() throws Exception {
        DataplaneBench.Line run = run(4L << 20, false);
        JsonNode line = JSON.readTree(run.json());

        assertThat(run.passed()).isTrue();
        assertThat(line.path("authenticated").asBoolean()).isTrue();
        assertThat(line.path("size").asLong()).isEqualTo(4L << 20);
        assertThat(line.path("streams").asInt()).isEqualTo(2);
        double memcpy = line.path("memcpy_gbps").asDouble();
        double socket = line.path("socket_gbps").asDouble();
        double tcp = line.path("tcp_gbps").asDouble();
        double local = line.path("local_gbps").asDouble();
        assertThat(memcpy).isPositive();
        assertThat(socket).isPositive();
        assertThat(tcp).isPositive();
        assertThat(local).isPositive();
        assertThat(line.path("local_vs_memcpy").asDouble())
                .isCloseTo(local / memcpy, within(0.002 + local / memcpy * 0.01));
        assertThat(line.path("tcp_vs_socket").asDouble())
                .isCloseTo(tcp / socket, within(0.002 + tcp / socket * 0.01));
        assertThat(line.path("tcp_vs_memcpy").asDouble())
                .isCloseTo(tcp / memcpy, within(0.002 + tcp / memcpy * 0.01));
        for (String figure :
                new String[] {
                    "tcp_read_gbps",
                    "tcp_get_ranges_gbps",
                    "tcp_get_ranges_vs_socket",
                    "put_local_gbps",
                    "get_ranges_gbps",
                    "cold_local_gbps"
                }) {
            assertThat(line.path(figure).asDouble()).as(figure).isPositive();
        }
        // a put prefers the writer's own segment: not one byte over tcp
        assertThat(line.path("put_tcp_bytes").isNumber()).isTrue();
        assertThat(line.path("put_tcp_bytes").asLong()).isZero();
    }

    @Test
    void betweenTwoHostsTheEngineIsAuthenticatedAndCountedOnTheWire() throws Exception {
        long size = 8L << 20;
        DataplaneBench.Line run = run(size, true);
        JsonNode line = JSON.readTree(run.json());

        assertThat(run.passed()).isTrue();
        assertThat(line.path("authenticated").asBoolean()).isTrue();
        assertThat(line.path("intruder_error").asString()).isNotEmpty();
        assertThat(line.path("hosts").asInt()).isEqualTo(2);
        assertThat(line.path("streams").asInt()).isEqualTo(2);
        assertThat(line.path("repeats").asInt()).isEqualTo(1);
        double socket = line.path("socket_gbps").asDouble();
        double tcp = line.path("tcp_gbps").asDouble();
        assertThat(socket).isPositive();
        assertThat(tcp).isPositive();
        assertThat(line.path("tcp_vs_socket").asDouble())
                .isCloseTo(tcp / socket, within(0.002 + tcp / socket * 0.01));
        // the memcpy yardstick, measured on the source host as on one machine
        double memcpy = line.path("memcpy_gbps").asDouble();
        assertThat(memcpy).isPositive();
        assertThat(line.path("tcp_vs_memcpy").asDouble())
                .isCloseTo(tcp / memcpy, within(0.002 + tcp / memcpy * 0.01));
        assertThat(line.path("socket_rounds_gbps")).hasSize(1);
        assertThat(line.path("tcp_rounds_gbps")).hasSize(1);
        // one measured write: the engine's payload, all of it on the source's data link
        long engineBytes = line.path("engine_tcp_bytes").asLong();
        assertThat(engineBytes).isEqualTo(size);
        assertThat(line.path("interface_tcp_payload_bytes").asLong())
                .isGreaterThanOrEqualTo(engineBytes);
        assertThat(line.path("interface_frames").asLong()).isPositive();
    }
}
