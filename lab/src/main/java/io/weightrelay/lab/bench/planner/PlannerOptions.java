package io.weightrelay.lab.bench.planner;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Parallelism;
import io.weightrelay.reshard.catalog.TensorLayout;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.manifest.Fp8BlockRule;
import io.weightrelay.reshard.placement.Mode;
import java.util.List;

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
 *
 * <p>{@code ./relay bench planner} makes these from its flags; tests make them directly.
 */
public record PlannerOptions(
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

    /**
     * Fills in {@code tp} and {@code ep} where not given (0): {@code --tp} defaults to {@code
     * --ep}, {@code --ep} to {@code --tp} for MoE models and to 1 for dense ones. Refuses a
     * deployment the flags cannot describe: neither given, data-parallel attention or pipeline
     * stages outside parameter-direct mode, more stages than the model has layers, an unknown
     * reference.
     */
    public PlannerOptions {
        if (tp == 0 && ep == 0) {
            throw new IllegalArgumentException("missing --tp (or --ep, which it then defaults to)");
        }
        List<TensorLayout> layout = ModelCatalog.layout(model);
        boolean moe = layout.stream().anyMatch(t -> t.expert() >= 0);
        if (tp == 0) {
            tp = ep;
        }
        if (ep == 0) {
            ep = moe ? tp : 1;
        }
        if (dpAttention && mode != Mode.DIRECT) {
            throw new IllegalArgumentException(
                    "--dp-attention shapes parameter-direct shards; it needs --mode direct"
                            + " (compat workers hold every tensor whole)");
        }
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
        if (against != null && !against.equals(MOONCAKE_3441)) {
            throw new IllegalArgumentException(
                    "--against names a reference planner: " + MOONCAKE_3441 + ", got " + against);
        }
    }

    /** {@code --rollout-dtype}: {@code bf16}, or {@code fp8} (block-scaled E4M3). */
    public static DType rolloutDtype(String text) {
        return switch (text) {
            case "bf16" -> DType.BF16;
            case "fp8" -> DType.F8_E4M3;
            default ->
                    throw new IllegalArgumentException(
                            "--rollout-dtype is bf16 or fp8 (block-scaled E4M3), got " + text);
        };
    }

    /** The instances' deployment. */
    public Parallelism parallelism() {
        return new Parallelism(tp, ep, dpAttention, pp);
    }
}
