package io.weightrelay.lab.cli;

import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.placement.Mode;
import picocli.CommandLine.Option;

/**
 * The flags that several commands take, each declared once. A command mixes in the ones it takes
 * ({@code @Mixin}) and gives the default it documents: the one place that default is written.
 */
final class Flags {

    private Flags() {}

    /** {@code -h}, {@code --help}: every command and group has it. */
    static final class Help {
        @Option(
                names = {"-h", "--help"},
                usageHelp = true,
                description = "Show this help and exit.")
        boolean help;
    }

    /** {@code --model}: a catalogued model. */
    static final class Model {
        @Option(
                names = "--model",
                paramLabel = "M",
                converter = Values.Model.class,
                completionCandidates = Values.Model.class,
                description =
                        "Catalogued model: ${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}.")
        String model;

        Model(String byDefault) {
            this.model = byDefault;
        }
    }

    /** {@code --instances} and {@code --tp}: the rollout instances and their tensor parallelism. */
    static final class Rollout {
        @Option(
                names = "--instances",
                paramLabel = "I",
                converter = Values.Positive.class,
                description = "Rollout instances; default ${DEFAULT-VALUE}.")
        int instances;

        @Option(
                names = "--tp",
                paramLabel = "P",
                converter = Values.Positive.class,
                description = "Tensor-parallel ranks per instance; default ${DEFAULT-VALUE}.")
        int tp;

        Rollout(int instances, int tp) {
            this.instances = instances;
            this.tp = tp;
        }
    }

    /** {@code --mode}: how the rollout workers hold their weights. */
    static final class RolloutMode {
        @Option(
                names = "--mode",
                paramLabel = "MODE",
                converter = Values.RolloutMode.class,
                completionCandidates = Values.RolloutMode.class,
                description = "${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}.")
        String mode = "compat";

        Mode parsed() {
            return Mode.parse(mode);
        }
    }

    /**
     * {@code --engine}: the data plane the command's services (or the benchmark itself) run on.
     * What {@code mooncake} does differs per command, so each command's description says it.
     */
    static final class Engine {
        static final String MOONCAKE = "mooncake";

        @Option(
                names = "--engine",
                paramLabel = "ENGINE",
                converter = Values.Engine.class,
                completionCandidates = Values.Engine.class,
                description =
                        "The data plane: ${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}."
                                + " mooncake needs root (see above).")
        String engine = "builtin";

        boolean mooncake() {
            return MOONCAKE.equals(engine);
        }

        DataplaneEngine dataplane() {
            return mooncake() ? DataplaneEngine.MOONCAKE : DataplaneEngine.BUILTIN;
        }
    }

    /** {@code --trainer-dtype} and {@code --rollout-dtype}: the conversion a publish makes. */
    static final class Dtypes {
        @Option(
                names = "--trainer-dtype",
                paramLabel = "D",
                defaultValue = "bf16",
                converter = Values.Dtype.class,
                completionCandidates = Values.Dtype.class,
                description = "${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}.")
        String trainerDtype;

        @Option(
                names = "--rollout-dtype",
                paramLabel = "D",
                defaultValue = "bf16",
                converter = Values.Dtype.class,
                description = "As --trainer-dtype; default ${DEFAULT-VALUE}.")
        String rolloutDtype;

        DType trainer() {
            return DType.ofWireName(trainerDtype);
        }

        DType rollout() {
            return DType.ofWireName(rolloutDtype);
        }
    }

    /**
     * {@code --seed}: the seed of the deterministic weights a trainer publishes and a check
     * expects.
     */
    static final class Seed {
        @Option(
                names = "--seed",
                paramLabel = "N",
                defaultValue = "1",
                description = "Seed of the deterministic weights; default ${DEFAULT-VALUE}.")
        long seed;
    }

    /** {@code --trainer-nodes}: the trainer nodes, each with its publisher. */
    static final class TrainerNodes {
        @Option(
                names = "--trainer-nodes",
                paramLabel = "T",
                converter = Values.Positive.class,
                description = "Trainer nodes, one publisher each; default ${DEFAULT-VALUE}.")
        int trainerNodes;

        TrainerNodes(int byDefault) {
            this.trainerNodes = byDefault;
        }
    }

    /** {@code --prefix}: what a run on several hosts names its namespaces and links after. */
    static final class HostsPrefix {
        @Option(
                names = "--prefix",
                paramLabel = "P",
                defaultValue = HostLab.DEFAULT_PREFIX,
                description =
                        "With --hosts: the prefix of the namespaces and links it makes; default"
                                + " ${DEFAULT-VALUE}.")
        String prefix;
    }

    /** {@code --warmup}: rounds run before the measured ones. */
    static final class Warmup {
        @Option(
                names = "--warmup",
                paramLabel = "N",
                converter = Values.NonNegative.class,
                description = "Rounds before the measured ones; default ${DEFAULT-VALUE}.")
        int warmup;

        Warmup(int byDefault) {
            this.warmup = byDefault;
        }
    }
}
