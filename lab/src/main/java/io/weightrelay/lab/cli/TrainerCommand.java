package io.weightrelay.lab.cli;

import io.weightrelay.lab.trainer.SimulatedTrainer;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "trainer",
        header = "The simulated trainer alone: publish generations of a catalogued model.",
        description = {
            "The simulated trainer alone: publishes generations of a catalogued model with"
                    + " deterministic contents through control-api and one publisher-service per"
                    + " trainer node. One JSON line per generation on stdout."
        },
        exitCodeList = {
            "0:every generation was committed",
            "1:a generation was aborted",
            RelayCommand.EXIT_USAGE,
            RelayCommand.EXIT_CANNOT
        })
final class TrainerCommand extends LabCommand {

    @Mixin final Flags.Model model = new Flags.Model("tiny");

    @Option(
            names = "--control-api",
            paramLabel = "URL",
            defaultValue = "http://127.0.0.1:8080",
            description = "control-api; default ${DEFAULT-VALUE}.")
    String controlApi;

    @Option(
            names = "--publisher",
            paramLabel = "NODE=URL",
            defaultValue = "trainer-0000=http://127.0.0.1:8081",
            description =
                    "A trainer node's publisher, once per node (repeat the flag); default"
                            + " ${DEFAULT-VALUE}.")
    List<String> publishers;

    @Option(
            names = "--token",
            paramLabel = "T",
            description = "The trainer token; default $RELAY_TRAINER_TOKEN.")
    String token;

    @Option(
            names = "--steps",
            paramLabel = "N",
            defaultValue = "1",
            converter = Values.PositiveLong.class,
            description = "Generations to publish; default ${DEFAULT-VALUE}.")
    long steps;

    @Option(
            names = "--first-step",
            paramLabel = "S",
            defaultValue = "0",
            description = "The first training step; default ${DEFAULT-VALUE}.")
    long firstStep;

    @Mixin Flags.Seed seed;

    @Mixin Flags.Dtypes dtypes;

    @Option(
            names = "--max-fragment-bytes",
            paramLabel = "BYTES",
            defaultValue = "67108864",
            converter = Values.PositiveLong.class,
            description = "Largest stored object; default ${DEFAULT-VALUE}.")
    long maxFragmentBytes;

    @Option(
            names = "--trainer-nodes",
            paramLabel = "T",
            converter = Values.Positive.class,
            description =
                    "Accepted for older scripts and ignored: the trainer nodes are the"
                            + " --publisher flags.")
    Integer trainerNodes;

    @Override
    Invocation<SimulatedTrainer.Options> invocation() {
        return new Invocation<>(
                SimulatedTrainer.class,
                new SimulatedTrainer.Options(
                        model.model,
                        controlApi,
                        List.copyOf(publishers),
                        token,
                        steps,
                        firstStep,
                        seed.seed,
                        dtypes.trainer(),
                        dtypes.rollout(),
                        maxFragmentBytes),
                SimulatedTrainer::run);
    }
}
