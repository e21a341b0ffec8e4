package io.weightrelay.lab.cli;

import io.weightrelay.lab.rollout.SimulatedRollout;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "rollout",
        header = "The simulated rollout engine alone: register, update, check every byte.",
        description = {
            "The simulated rollout engine alone: one engine per loader-service (instance i talks"
                    + " to the i-th --loaders URL). Each registers its workers and buffers, then"
                    + " per update asks its loader to update, follows the progress and checks every"
                    + " byte it received. One JSON line per engine and update on stdout."
        },
        exitCodeList = {
            "0:every update ended UPDATED with every byte correct",
            "1:an update failed or a byte was wrong",
            RelayCommand.EXIT_USAGE,
            RelayCommand.EXIT_CANNOT
        })
final class RolloutCommand extends LabCommand {

    @Mixin final Flags.Model model = new Flags.Model("tiny");

    @Mixin final Flags.Rollout rollout = new Flags.Rollout(4, 2);

    @Option(
            names = "--rollout-nodes",
            paramLabel = "N",
            defaultValue = "2",
            converter = Values.Positive.class,
            description = "Rollout nodes the instances are packed onto; default ${DEFAULT-VALUE}.")
    int rolloutNodes;

    @Mixin Flags.RolloutMode mode;

    @Option(
            names = "--loaders",
            paramLabel = "URL,...",
            required = true,
            description = "One loader-service URL per instance, comma-separated.")
    String loaders;

    @Option(
            names = "--control-url",
            paramLabel = "URL",
            defaultValue = "http://127.0.0.1:8080",
            description = "control-api; default ${DEFAULT-VALUE}.")
    String controlUrl;

    @Option(
            names = "--token",
            paramLabel = "T",
            defaultValue = "",
            description = "The loader token.")
    String token;

    @Option(
            names = "--group",
            paramLabel = "G",
            defaultValue = "lab",
            description = "Rollout group; default ${DEFAULT-VALUE}.")
    String group;

    @Option(
            names = "--generation",
            paramLabel = "N",
            description = "Update to this generation; default the active one.")
    Long generation;

    @Option(
            names = "--updates",
            paramLabel = "N",
            defaultValue = "1",
            converter = Values.Positive.class,
            description = "Updates per engine; default ${DEFAULT-VALUE}.")
    int updates;

    @Mixin Flags.Seed seed;

    @Override
    Invocation<SimulatedRollout.Options> invocation() {
        return new Invocation<>(
                SimulatedRollout.class,
                new SimulatedRollout.Options(
                        model.model,
                        rollout.instances,
                        rollout.tp,
                        rolloutNodes,
                        mode.parsed(),
                        loaderUrls(),
                        controlUrl,
                        token,
                        group,
                        generation,
                        updates,
                        seed.seed),
                SimulatedRollout::run);
    }

    /** {@code --loaders}, one URL per instance. */
    private List<String> loaderUrls() {
        return List.of(loaders.split(","));
    }

    @Override
    void check() {
        if (loaderUrls().size() != rollout.instances) {
            throw usage("--loaders needs one URL per instance (" + rollout.instances + ")");
        }
    }
}
