package io.weightrelay.lab.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./relay bench update --engine mooncake} and {@code ./relay bench dataplane --engine
 * mooncake} at their smallest (the tiny model, one measured round; a few MiB), so the benches'
 * Mooncake runs cannot rot: each runs on a Mooncake master of its own in a namespace (root, as CI
 * runs) and prints every field its help names, with values that hang together.
 */
class MooncakeBenchTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Test
    void updateBenchRunsTheScenarioOnBothEnginesAndComparesThem() throws Exception {
        JsonNode line =
                JSON.readTree(
                        UpdateBench.line(
                                new UpdateBench.Options(
                                        "tiny",
                                        2,
                                        1,
                                        Mode.COMPAT,
                                        1,
                                        new WarmupRounds(OptionalInt.of(0), 1),
                                        UpdateBench.Install.of(false, Mode.COMPAT),
                                        true,
                                        true,
                                        DataplaneEngine.MOONCAKE,
                                        false,
                                        2,
                                        ServiceProcess.home()),
                                MooncakeBenchTest::smallYardsticks));

        assertThat(line.path("engine").asString()).isEqualTo("mooncake");
        double mooncake = line.path("update_s").asDouble();
        double builtin = line.path("builtin_update_s").asDouble();
        assertThat(mooncake).isPositive();
        assertThat(builtin).isPositive();
        assertThat(line.path("mooncake_vs_builtin").asDouble())
                .isCloseTo(builtin / mooncake, within(0.002 + builtin / mooncake * 0.002));
        assertThat(line.path("builtin_rounds_update_s")).hasSize(1);
        assertThat(line.path("builtin_cold_update_s").asDouble()).isPositive();
        assertThat(line.path("builtin_update_vs_bound").asDouble()).isPositive();
        // both labs read the store once per needed byte and had every byte checked
        assertThat(line.path("store_read_ratio").asDouble()).isEqualTo(1.0);
        assertThat(line.path("builtin_store_read_ratio").asDouble()).isEqualTo(1.0);
        assertThat(line.path("bytes_verified").asLong()).isPositive();
        assertThat(line.path("builtin_bytes_verified").asLong()).isPositive();
        assertThat(line.path("first_weights_s").asDouble()).isPositive();
        assertThat(line.path("naive_update_s").isNull()).isTrue();
        assertThat(line.path("cpu_s").has("mooncake_agents")).isTrue();
    }

    /**
     * The bound's rates measured as the bench does, with the same parallelism, on less memory (the
     * bench's 256 MiB slices per thread do not fit the test JVM's native memory limit).
     */
    private static Yardsticks smallYardsticks() throws Exception {
        int threads = UpdateBench.COPY_THREADS;
        int streams = UpdateBench.ENGINE_STREAMS;
        return new Yardsticks(
                Yardsticks.javaCopyBytesPerSecond(8 << 20, 2),
                Yardsticks.parallelMemcpy(threads, 8 << 20).rate(),
                threads,
                Yardsticks.parallelChecksum(threads, 8 << 20).rate(),
                Yardsticks.loopback(1, 64L << 20).rate(),
                Yardsticks.loopback(streams, 64L << 20).rate(),
                streams);
    }

    @Test
    void dataplaneBenchMeasuresTheTransferEngineAndTheStoreAgainstASocket() throws Exception {
        JsonNode line =
                JSON.readTree(
                        DataplaneBench.line(
                                        new DataplaneOptions(
                                                4L << 20,
                                                1,
                                                "redis://127.0.0.1:6379",
                                                2,
                                                "wr-lab",
                                                false,
                                                DataplaneEngine.MOONCAKE))
                                .json());

        assertThat(line.path("engine").asString()).isEqualTo("mooncake");
        assertThat(line.path("write_exact").asBoolean()).isTrue();
        double socket = line.path("socket_gbps").asDouble();
        double tcp = line.path("tcp_gbps").asDouble();
        assertThat(socket).isPositive();
        assertThat(tcp).isPositive();
        assertThat(line.path("tcp_vs_socket").asDouble())
                .isCloseTo(tcp / socket, within(0.002 + tcp / socket * 0.01));
        assertThat(line.path("streams").asInt()).isEqualTo(MooncakeOnOneHost.STREAMS);
        double memcpy = line.path("memcpy_gbps").asDouble();
        assertThat(memcpy).isPositive();
        assertThat(line.path("tcp_vs_memcpy").asDouble())
                .isCloseTo(tcp / memcpy, within(0.002 + tcp / memcpy * 0.01));
        assertThat(line.path("tcp_read_gbps").asDouble()).isPositive();
        assertThat(line.path("put_gbps").asDouble()).isPositive();
        assertThat(line.path("tcp_get_ranges_gbps").asDouble()).isPositive();
        assertThat(line.path("get_ranges").asInt()).isEqualTo(4);
        assertThat(line.path("small_write_us").asDouble()).isPositive();
        assertThat(line.path("tcp_rounds_gbps")).hasSize(1);
    }
}
