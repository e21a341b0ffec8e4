package io.weightrelay.lab.bench.planner;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Parallelism;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.placement.Mode;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The flags of {@code bench planner}, in SGLang's terms ({@link Parallelism}): {@code --tp} is the
 * ranks of one instance, which spans nodes when it has more ranks than a node; {@code --ep} the
 * expert-parallel groups. {@code --ep} defaults to {@code --tp} for MoE models (every expert whole
 * on one rank, as MoE deployments run) and to 1 for dense ones; {@code --tp} defaults to {@code
 * --ep} when only {@code --ep} is given. {@code --dp-attention} (a switch) holds every non-expert
 * weight whole on every rank. {@code --rollout-dtype fp8} serves the tensors {@link
 * Fp8BlockRule#defaults()} selects as block-scaled FP8 with their scale tensors; the default {@code
 * bf16} serves the trainer's BF16. {@code --pp} (default 1) splits each instance into pipeline
 * stages of {@code --tp} ranks each, every stage holding only its layers; an instance then has
 * {@code tp * pp} ranks. The ranks spread evenly over {@code --rollout-nodes} unless {@code
 * --gpus-per-node G} is given: then they fill nodes of {@code G} ranks in order, the last node
 * holding what remains, as a scheduler fills machines ({@code gpusPerNode} 0: evenly).
 */
public record BenchArgs(
        String model,
        int trainerNodes,
        int rolloutNodes,
        int instances,
        int tp,
        int ep,
        boolean dpAttention,
        int pp,
        DType rolloutDtype,
        Mode mode,
        double nicGbps,
        int nicsPerNode,
        int gpusPerNode,
        String against,
        int againstTimeoutS) {

    /** The reference planner {@code --against} names: Mooncake's #3441, from the test venv. */
    public static final String MOONCAKE_3441 = "mooncake-3441";

    private static final Set<String> FLAGS =
            Set.of(
                    "--model",
                    "--trainer-nodes",
                    "--rollout-nodes",
                    "--instances",
                    "--tp",
                    "--ep",
                    "--pp",
                    "--rollout-dtype",
                    "--mode",
                    "--nic-gbps",
                    "--nics-per-node",
                    "--gpus-per-node",
                    "--against",
                    "--against-timeout-s");

    private static final Set<String> SWITCHES = Set.of("--dp-attention");

    static final String USAGE =
            "usage: bench planner --model M --trainer-nodes T --rollout-nodes R --instances I"
                    + " --tp P|--ep E [--tp P] [--ep E] [--pp S] [--dp-attention]"
                    + " [--rollout-dtype bf16|fp8]"
                    + " --mode compat|direct --nic-gbps G [--nics-per-node N] [--gpus-per-node G]"
                    + " [--against mooncake-3441 [--against-timeout-s S]]";

    public static BenchArgs parse(String[] args) {
        Map<String, String> values = new HashMap<>();
        Set<String> switches = new HashSet<>();
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (SWITCHES.contains(flag)) {
                if (!switches.add(flag)) {
                    throw new IllegalArgumentException("flag " + flag + " given twice");
                }
                continue;
            }
            String value;
            int eq = flag.indexOf('=');
            if (eq > 0) {
                value = flag.substring(eq + 1);
                flag = flag.substring(0, eq);
            } else {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("flag " + flag + " needs a value");
                }
                value = args[++i];
            }
            if (SWITCHES.contains(flag)) {
                throw new IllegalArgumentException("flag " + flag + " takes no value");
            }
            if (!FLAGS.contains(flag)) {
                throw new IllegalArgumentException("unknown flag " + flag);
            }
            if (values.put(flag, value) != null) {
                throw new IllegalArgumentException("flag " + flag + " given twice");
            }
        }
        for (String required :
                List.of(
                        "--model",
                        "--trainer-nodes",
                        "--rollout-nodes",
                        "--instances",
                        "--mode",
                        "--nic-gbps")) {
            if (!values.containsKey(required)) {
                throw new IllegalArgumentException("missing " + required);
            }
        }
        String model = values.get("--model");
        List<TensorLayout> layout = ModelCatalog.layout(model);
        boolean moe = layout.stream().anyMatch(t -> t.expert() >= 0);
        if (!values.containsKey("--tp") && !values.containsKey("--ep")) {
            throw new IllegalArgumentException("missing --tp (or --ep, which it then defaults to)");
        }
        int tp = positive(values, values.containsKey("--tp") ? "--tp" : "--ep");
        int ep = values.containsKey("--ep") ? positive(values, "--ep") : (moe ? tp : 1);
        Mode mode = Mode.parse(values.get("--mode"));
        boolean dpAttention = switches.contains("--dp-attention");
        if (dpAttention && mode != Mode.DIRECT) {
            throw new IllegalArgumentException(
                    "--dp-attention shapes parameter-direct shards; it needs --mode direct"
                            + " (compat workers hold every tensor whole)");
        }
        int pp = values.containsKey("--pp") ? positive(values, "--pp") : 1;
        if (pp > 1 && mode != Mode.DIRECT) {
            throw new IllegalArgumentException(
                    "--pp "
                            + pp
                            + " gives each stage only its layers, a parameter-direct placement; it"
                            + " needs --mode direct (compat workers hold every tensor whole)");
        }
        int layers = 0;
        for (TensorLayout t : layout) {
            if (t.layer() != TensorLayout.AFTER_LAYERS) {
                layers = Math.max(layers, t.layer() + 1);
            }
        }
        if (pp > layers) {
            throw new IllegalArgumentException(
                    "--pp "
                            + pp
                            + " is more pipeline stages than the "
                            + layers
                            + " decoder layers of "
                            + model);
        }
        DType rolloutDtype = rolloutDtype(values.getOrDefault("--rollout-dtype", "bf16"));
        String gbpsText = values.get("--nic-gbps");
        double gbps;
        try {
            gbps = Double.parseDouble(gbpsText);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--nic-gbps needs a number, got " + gbpsText);
        }
        if (!(gbps > 0) || Double.isInfinite(gbps)) {
            throw new IllegalArgumentException("--nic-gbps must be positive");
        }
        String against = values.get("--against");
        if (against != null && !against.equals(MOONCAKE_3441)) {
            throw new IllegalArgumentException(
                    "--against names a reference planner: " + MOONCAKE_3441 + ", got " + against);
        }
        if (against == null && values.containsKey("--against-timeout-s")) {
            throw new IllegalArgumentException("--against-timeout-s needs --against");
        }
        return new BenchArgs(
                model,
                positive(values, "--trainer-nodes"),
                positive(values, "--rollout-nodes"),
                positive(values, "--instances"),
                tp,
                ep,
                dpAttention,
                pp,
                rolloutDtype,
                mode,
                gbps,
                values.containsKey("--nics-per-node") ? positive(values, "--nics-per-node") : 8,
                values.containsKey("--gpus-per-node") ? positive(values, "--gpus-per-node") : 0,
                against,
                values.containsKey("--against-timeout-s")
                        ? positive(values, "--against-timeout-s")
                        : 600);
    }

    /** The instances' deployment. */
    public Parallelism parallelism() {
        return new Parallelism(tp, ep, dpAttention, pp);
    }

    private static DType rolloutDtype(String text) {
        return switch (text) {
            case "bf16" -> DType.BF16;
            case "fp8" -> DType.F8_E4M3;
            default ->
                    throw new IllegalArgumentException(
                            "--rollout-dtype is bf16 or fp8 (block-scaled E4M3), got " + text);
        };
    }

    private static int positive(Map<String, String> values, String flag) {
        String text = values.get(flag);
        try {
            int value = Integer.parseInt(text);
            if (value < 1) {
                throw new IllegalArgumentException(flag + " must be at least 1, got " + text);
            }
            return value;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + " needs an integer, got " + text);
        }
    }
}
