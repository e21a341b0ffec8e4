package io.weightrelay.reshard.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.reshard.placement.Mode;
import org.junit.jupiter.api.Test;

class PlannerBenchTest {
    private static String[] args(String mode) {
        return new String[] {
            "--model",
            "tiny",
            "--trainer-nodes",
            "2",
            "--rollout-nodes",
            "4",
            "--instances",
            "4",
            "--tp",
            "2",
            "--mode",
            mode,
            "--nic-gbps",
            "400",
            "--nics-per-node",
            "2"
        };
    }

    @Test
    void parsesTheIssueFlagsAndDefaultsExpertParallelismToTp() {
        BenchArgs parsed = BenchArgs.parse(args("direct"));
        assertThat(parsed.mode()).isEqualTo(Mode.DIRECT);
        assertThat(parsed.ep()).isEqualTo(2);
        assertThat(parsed.nicsPerNode()).isEqualTo(2);
        assertThatThrownBy(() -> BenchArgs.parse(new String[] {"--model", "tiny"}))
                .hasMessageContaining("missing");
        assertThatThrownBy(() -> BenchArgs.parse(new String[] {"--bogus", "1"}))
                .hasMessageContaining("unknown flag");
        String[] bad = args("direct");
        bad[7] = "zero";
        assertThatThrownBy(() -> BenchArgs.parse(bad)).hasMessageContaining("--instances");
    }

    @Test
    void compatBenchOnTinyIsValidWithOneSendPerRemoteNode() {
        PlannerBench.Result result = PlannerBench.run(BenchArgs.parse(args("compat")));
        assertThat(result.valid()).isTrue();
        assertThat(result.storeReadRatio()).isEqualTo(1.0);
        assertThat(result.deliveryRatio()).isEqualTo(1.0);
        assertThat(result.networkSendsPerTensorMax()).isEqualTo(3);
        assertThat(result.predictedUpdateS()).isGreaterThanOrEqualTo(result.lowerBoundS());
        assertThat(result.toJson())
                .startsWith("{\"tensors\":")
                .contains("\"store_read_ratio\":1.0", "\"delivery_ratio\":1.0", "\"valid\":true")
                .doesNotContain("\n");
    }

    @Test
    void directBenchOnTinyDeliversExactlyTheStoredBytes() {
        PlannerBench.Result result = PlannerBench.run(BenchArgs.parse(args("direct")));
        assertThat(result.valid()).isTrue();
        assertThat(result.deliveryRatio()).isEqualTo(1.0);
        assertThat(result.deliveryBytes()).isGreaterThan(2 * result.modelBytes());
    }
}
