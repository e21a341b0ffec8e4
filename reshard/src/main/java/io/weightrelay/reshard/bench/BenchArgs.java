package io.weightrelay.reshard.bench;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.placement.Mode;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The flags of {@code bench planner}. {@code --ep} defaults to {@code --tp} for MoE models (every
 * expert whole on one rank, as MoE deployments run) and to 1 for dense ones.
 */
public record BenchArgs(
        String model,
        int trainerNodes,
        int rolloutNodes,
        int instances,
        int tp,
        int ep,
        Mode mode,
        double nicGbps,
        int nicsPerNode) {

    private static final Set<String> FLAGS =
            Set.of(
                    "--model",
                    "--trainer-nodes",
                    "--rollout-nodes",
                    "--instances",
                    "--tp",
                    "--ep",
                    "--mode",
                    "--nic-gbps",
                    "--nics-per-node");

    static final String USAGE =
            "usage: bench planner --model M --trainer-nodes T --rollout-nodes R --instances I"
                    + " --tp P [--ep E] --mode compat|direct --nic-gbps G [--nics-per-node N]";

    public static BenchArgs parse(String[] args) {
        Map<String, String> values = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
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
                        "--tp",
                        "--mode",
                        "--nic-gbps")) {
            if (!values.containsKey(required)) {
                throw new IllegalArgumentException("missing " + required);
            }
        }
        String model = values.get("--model");
        List<TensorLayout> layout = ModelCatalog.layout(model);
        boolean moe = layout.stream().anyMatch(t -> t.expert() >= 0);
        int tp = positive(values, "--tp");
        int ep = values.containsKey("--ep") ? positive(values, "--ep") : (moe ? tp : 1);
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
        return new BenchArgs(
                model,
                positive(values, "--trainer-nodes"),
                positive(values, "--rollout-nodes"),
                positive(values, "--instances"),
                tp,
                ep,
                Mode.parse(values.get("--mode")),
                gbps,
                values.containsKey("--nics-per-node") ? positive(values, "--nics-per-node") : 8);
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
