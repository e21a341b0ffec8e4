package io.weightrelay.lab.bench.planner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.lab.cli.Invocation;
import io.weightrelay.lab.cli.RelayCli;
import io.weightrelay.reshard.catalog.Parallelism;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.placement.Mode;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PlannerBenchTest {
    /**
     * {@code ./relay bench planner args}, parsed as {@code ./relay} parses it: the options the
     * bench gets, or the refusal (exit 2, nothing run) as the exception's message.
     */
    private static PlannerOptions parse(String... args) throws Exception {
        List<String> line = new ArrayList<>(List.of("bench", "planner"));
        line.addAll(List.of(args));
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<Invocation<?>> launched = new ArrayList<>();
        int code =
                RelayCli.execute(
                        line.toArray(String[]::new),
                        new PrintStream(OutputStream.nullOutputStream()),
                        new PrintStream(err, true, StandardCharsets.UTF_8),
                        (command, invocation, redis) -> launched.add(invocation));
        if (code != 0) {
            assertThat(code).isEqualTo(RelayCli.USAGE);
            assertThat(launched).isEmpty();
            throw new IllegalArgumentException(err.toString(StandardCharsets.UTF_8));
        }
        assertThat(launched).hasSize(1);
        assertThat(launched.get(0).runs()).isEqualTo(PlannerBench.class);
        return (PlannerOptions) launched.get(0).options();
    }

    /** A bench on tiny: 2 trainer nodes, 4 rollout nodes of 2 NICs at 400 Gb/s, and {@code mid}. */
    private static String[] tiny(String... mid) {
        List<String> args =
                new ArrayList<>(
                        List.of("--model", "tiny", "--trainer-nodes", "2", "--rollout-nodes", "4"));
        args.addAll(List.of(mid));
        args.addAll(List.of("--nic-gbps", "400", "--nics-per-node", "2"));
        return args.toArray(String[]::new);
    }

    private static String[] args(String mode) {
        return tiny("--instances", "4", "--tp", "2", "--mode", mode);
    }

    @Test
    void parsesTheIssueFlagsAndDefaultsExpertParallelismToTp() throws Exception {
        PlannerOptions parsed = parse(args("direct"));
        assertThat(parsed.mode()).isEqualTo(Mode.DIRECT);
        assertThat(parsed.ep()).isEqualTo(2);
        assertThat(parsed.nicsPerNode()).isEqualTo(2);
        assertThatThrownBy(() -> parse(new String[] {"--model", "tiny"}))
                .hasMessageContaining("Missing required options");
        assertThatThrownBy(() -> parse(new String[] {"--bogus", "1"}))
                .hasMessageContaining("Unknown options: '--bogus'");
        String[] bad = args("direct");
        bad[7] = "zero";
        assertThatThrownBy(() -> parse(bad)).hasMessageContaining("--instances");
    }

    @Test
    void againstMooncake3441PlansTheSameBytesOrReportsItsRefusal() throws Exception {
        PlannerBench.Result same =
                PlannerBench.plan(
                        parse(
                                tiny(
                                        "--instances",
                                        "2",
                                        "--tp",
                                        "2",
                                        "--mode",
                                        "direct",
                                        "--against",
                                        "mooncake-3441")));
        assertThat(same.toJson())
                .contains(
                        "\"plan_ms\":",
                        "\"peak_heap_bytes\":",
                        "\"reference\":\"planned\"",
                        "\"reference_plan_ms\":",
                        "\"reference_peak_bytes\":",
                        "\"reference_vs_ours\":",
                        "\"reference_delivery_bytes\":" + same.deliveryBytes() + ",")
                .endsWith("}")
                .doesNotContain("\n");

        // Expert-TP inside EP groups (--tp 4 --ep 2): #3187 cannot say it; a result, not an error.
        PlannerBench.Result refused =
                PlannerBench.plan(
                        parse(
                                tiny(
                                        "--instances",
                                        "1",
                                        "--tp",
                                        "4",
                                        "--ep",
                                        "2",
                                        "--mode",
                                        "direct",
                                        "--against",
                                        "mooncake-3441")));
        assertThat(refused.valid()).isTrue();
        assertThat(refused.toJson())
                .contains("\"reference\":\"refused\"", "\"reference_refusal\":\"")
                .doesNotContain("reference_vs_ours");

        String[] other =
                tiny("--instances", "1", "--tp", "2", "--mode", "direct", "--against", "other");
        assertThatThrownBy(() -> parse(other)).hasMessageContaining("mooncake-3441");
        String[] timeoutAlone = other.clone();
        timeoutAlone[12] = "--against-timeout-s";
        timeoutAlone[13] = "5";
        assertThatThrownBy(() -> parse(timeoutAlone))
                .hasMessageContaining("--against-timeout-s needs --against");
        assertThat(parse(args("direct")).against()).isNull();
        assertThat(PlannerBench.plan(parse(args("direct"))).toJson()).doesNotContain("reference");
    }

    @Test
    void compatBenchOnTinyIsValidWithOneSendPerRemoteNode() throws Exception {
        PlannerBench.Result result = PlannerBench.plan(parse(args("compat")));
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
    void directBenchOnTinyDeliversExactlyTheStoredBytes() throws Exception {
        PlannerBench.Result result = PlannerBench.plan(parse(args("direct")));
        assertThat(result.valid()).isTrue();
        assertThat(result.deliveryRatio()).isEqualTo(1.0);
        assertThat(result.deliveryBytes()).isGreaterThan(2 * result.modelBytes());
    }

    private static final String[] WIDE_EP =
            tiny(
                    "--instances",
                    "2",
                    "--ep",
                    "4",
                    "--dp-attention",
                    "--rollout-dtype",
                    "fp8",
                    "--mode",
                    "direct");

    @Test
    void parsesWideExpertParallelismWithTpDefaultingToEp() throws Exception {
        PlannerOptions parsed = parse(WIDE_EP);
        assertThat(parsed.tp()).isEqualTo(4);
        assertThat(parsed.ep()).isEqualTo(4);
        assertThat(parsed.dpAttention()).isTrue();
        assertThat(parsed.rolloutDtype()).isEqualTo(DType.F8_E4M3);
        assertThat(parse(args("direct")).dpAttention()).isFalse();
        assertThat(parse(args("direct")).rolloutDtype()).isEqualTo(DType.BF16);

        String[] compat = WIDE_EP.clone();
        compat[14] = "compat";
        assertThatThrownBy(() -> parse(compat))
                .hasMessageContaining("--dp-attention")
                .hasMessageContaining("--mode direct");
        String[] fp4 = WIDE_EP.clone();
        fp4[12] = "fp4";
        assertThatThrownBy(() -> parse(fp4)).hasMessageContaining("valid: bf16, fp8");
        String[] valued = WIDE_EP.clone();
        valued[10] = "--dp-attention=yes";
        assertThatThrownBy(() -> parse(valued))
                .hasMessageContaining("'--dp-attention': 'yes' is not a boolean");
        List<String> neither = new ArrayList<>(List.of(args("direct")));
        neither.subList(8, 10).clear();
        assertThatThrownBy(() -> parse(neither.toArray(String[]::new)))
                .hasMessageContaining("Missing required option: '--tp=P'");
    }

    @Test
    void wideExpertParallelFp8BenchOnTinyReadsOnceAndDeliversExactly() throws Exception {
        PlannerBench.Result result = PlannerBench.plan(parse(WIDE_EP));
        assertThat(result.valid()).isTrue();
        assertThat(result.storeReadRatio()).isEqualTo(1.0);
        assertThat(result.deliveryRatio()).isEqualTo(1.0);
        // FP8 weights and their scale tensors: more tensors, fewer bytes than the BF16 model
        PlannerBench.Result bf16 = PlannerBench.plan(parse(args("direct")));
        assertThat(result.tensors()).isGreaterThan(bf16.tensors());
        assertThat(result.modelBytes()).isLessThan(bf16.modelBytes());
        assertThat(result.predictedUpdateS()).isGreaterThanOrEqualTo(result.lowerBoundS());
    }

    @Test
    void unevenlyPackedNodesPlanWithOneReadAndExactDelivery() throws Exception {
        // Three instances of tp 2 on nodes of 4 GPUs: rollout-0001 holds one instance, half full.
        String[] uneven =
                tiny("--instances", "3", "--tp", "2", "--mode", "direct", "--gpus-per-node", "4");
        uneven[5] = "2";
        PlannerOptions parsed = parse(uneven);
        assertThat(parsed.gpusPerNode()).isEqualTo(4);
        assertThat(parse(args("direct")).gpusPerNode()).isZero();
        PlannerBench.Result result = PlannerBench.plan(parsed);
        assertThat(result.valid()).isTrue();
        assertThat(result.storeReadRatio()).isEqualTo(1.0);
        assertThat(result.deliveryRatio()).isEqualTo(1.0);
        assertThat(result.predictedUpdateS()).isGreaterThanOrEqualTo(result.lowerBoundS());
        // Without --gpus-per-node, six ranks do not spread evenly over four nodes.
        String[] even = tiny("--instances", "3", "--tp", "2", "--mode", "direct");
        assertThatThrownBy(() -> PlannerBench.plan(parse(even))).hasMessageContaining("evenly");
    }

    private static String[] bench(String... extra) {
        List<String> args =
                new java.util.ArrayList<>(
                        List.of(
                                "--model",
                                "small-moe",
                                "--trainer-nodes",
                                "2",
                                "--rollout-nodes",
                                "4",
                                "--instances",
                                "2",
                                "--tp",
                                "2",
                                "--nic-gbps",
                                "400",
                                "--nics-per-node",
                                "2"));
        args.addAll(List.of(extra));
        return args.toArray(String[]::new);
    }

    @Test
    void benchPlannerTakesPipelineStages() throws Exception {
        PlannerOptions parsed =
                parse(bench("--pp", "2", "--rollout-dtype", "fp8", "--mode", "direct"));
        assertThat(parsed.pp()).isEqualTo(2);
        assertThat(parsed.parallelism()).isEqualTo(new Parallelism(2, 2, false, 2));
        PlannerBench.Result result = PlannerBench.plan(parsed);
        assertThat(result.valid()).isTrue();
        assertThat(result.storeReadRatio()).isEqualTo(1.0);
        assertThat(result.deliveryRatio()).isEqualTo(1.0);

        assertThat(parse(bench("--mode", "direct")).pp()).isEqualTo(1);
        assertThatThrownBy(() -> parse(bench("--pp", "2", "--mode", "compat")))
                .hasMessageContaining("--pp 2")
                .hasMessageContaining("--mode direct");
        assertThatThrownBy(() -> parse(bench("--pp", "3", "--mode", "direct")))
                .hasMessageContaining("--pp 3")
                .hasMessageContaining("2 decoder layers of small-moe");
        assertThatThrownBy(() -> parse(bench("--pp", "0", "--mode", "direct")))
                .hasMessageContaining("--pp")
                .hasMessageContaining("'0' must be at least 1");
    }
}
