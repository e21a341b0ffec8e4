package io.weightrelay.lab.cli;

import io.weightrelay.lab.bench.planner.PlannerBench;
import io.weightrelay.lab.bench.planner.PlannerOptions;
import io.weightrelay.reshard.placement.Mode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ./relay bench planner}: reshard's planner alone, no services. */
@Command(
        name = "planner",
        header = "reshard's planner on one catalogued deployment, no services.",
        description = {
            "reshard's planner on one catalogued deployment, no services: plan_ms (cold, one"
                    + " thread), slice sizes, per-NIC load."
        },
        exitCodeList = {RelayCommand.EXIT_OK, RelayCommand.EXIT_CHECK, RelayCommand.EXIT_USAGE})
final class BenchPlannerCommand extends LabCommand {
    @Option(
            names = "--model",
            paramLabel = "M",
            required = true,
            converter = Values.Model.class,
            completionCandidates = Values.Model.class,
            description = "Catalogued model (required): ${COMPLETION-CANDIDATES}.")
    String model;

    @Option(
            names = "--trainer-nodes",
            paramLabel = "T",
            required = true,
            converter = Values.Positive.class,
            description = "Trainer nodes (required).")
    int trainerNodes;

    @Option(
            names = "--rollout-nodes",
            paramLabel = "R",
            required = true,
            converter = Values.Positive.class,
            description = "Rollout nodes (required).")
    int rolloutNodes;

    @Option(
            names = "--instances",
            paramLabel = "I",
            required = true,
            converter = Values.Positive.class,
            description = "Rollout instances (required).")
    int instances;

    @Option(
            names = "--tp",
            paramLabel = "P",
            converter = Values.Positive.class,
            description =
                    "Ranks per instance, as SGLang's --tp-size (an instance of more ranks than"
                            + " a node has spans nodes); default --ep. One of the two is"
                            + " required.")
    Integer tp;

    @Option(
            names = "--ep",
            paramLabel = "E",
            converter = Values.Positive.class,
            description =
                    "Expert-parallel groups, dividing --tp (SGLang's --ep-size); default --tp"
                            + " for MoE models, 1 for dense.")
    Integer ep;

    @Option(
            names = "--pp",
            paramLabel = "S",
            defaultValue = "1",
            converter = Values.Positive.class,
            description =
                    "Pipeline stages per instance (SGLang's --pp-size), each of --tp ranks"
                            + " holding only its layers (needs --mode direct); default"
                            + " ${DEFAULT-VALUE}.")
    int pp;

    @Option(
            names = "--dp-attention",
            description =
                    "Data-parallel attention, SGLang's wide-EP deployment: every weight but"
                            + " the routed experts whole on every rank (needs --mode direct).")
    boolean dpAttention;

    @Option(
            names = "--rollout-dtype",
            paramLabel = "DTYPE",
            converter = Values.RolloutDtype.class,
            completionCandidates = Values.RolloutDtype.class,
            description =
                    "${COMPLETION-CANDIDATES}; fp8 serves linear projections and experts as"
                            + " E4M3 with 128x128 block scales (weight_scale_inv); default"
                            + " ${DEFAULT-VALUE}.")
    String rolloutDtype = "bf16";

    @Option(
            names = "--mode",
            paramLabel = "MODE",
            required = true,
            converter = Values.RolloutMode.class,
            completionCandidates = Values.RolloutMode.class,
            description = "${COMPLETION-CANDIDATES} (required).")
    String mode;

    @Option(
            names = "--nic-gbps",
            paramLabel = "G",
            required = true,
            converter = Values.PositiveNumber.class,
            description = "Each NIC's rate in Gbit/s (required).")
    double nicGbps;

    @Option(
            names = "--nics-per-node",
            paramLabel = "N",
            defaultValue = "8",
            converter = Values.Positive.class,
            description = "Default ${DEFAULT-VALUE}.")
    int nicsPerNode;

    @Option(
            names = "--gpus-per-node",
            paramLabel = "G",
            converter = Values.Positive.class,
            description =
                    "Ranks per node: they fill the --rollout-nodes in order, the last node"
                            + " holding what remains, as a scheduler fills machines; by"
                            + " default the ranks spread evenly over the nodes.")
    Integer gpusPerNode;

    @Option(
            names = "--against",
            paramLabel = "PLANNER",
            description =
                    "Also plan the deployment with a reference planner: mooncake-3441"
                            + " (Mooncake's own, from the test venv python/ci-venv.sh makes),"
                            + " printing reference_plan_ms, reference_peak_bytes and"
                            + " reference_vs_ours, or the refusal as a result.")
    String against;

    @Option(
            names = "--against-timeout-s",
            paramLabel = "S",
            defaultValue = "600",
            converter = Values.Positive.class,
            description =
                    "The reference's time limit; reference timeout past it; default"
                            + " ${DEFAULT-VALUE}.")
    int againstTimeoutS;

    @Override
    void check() {
        if (tp == null && ep == null) {
            throw usage("Missing required option: '--tp=P' (or '--ep=E', which it defaults to)");
        }
        onlyWith(against != null, "--against", "--against-timeout-s");
    }

    @Override
    Invocation<PlannerOptions> invocation() {
        return new Invocation<>(
                PlannerBench.class,
                new PlannerOptions(
                        model,
                        trainerNodes,
                        rolloutNodes,
                        instances,
                        tp == null ? 0 : tp,
                        ep == null ? 0 : ep,
                        dpAttention,
                        pp,
                        PlannerOptions.rolloutDtype(rolloutDtype),
                        Mode.parse(mode),
                        nicGbps,
                        nicsPerNode,
                        gpusPerNode == null ? 0 : gpusPerNode,
                        against,
                        againstTimeoutS),
                PlannerBench::run);
    }
}
