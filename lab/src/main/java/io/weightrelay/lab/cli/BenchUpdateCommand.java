package io.weightrelay.lab.cli;

import io.weightrelay.lab.bench.UpdateBench;
import io.weightrelay.lab.bench.WarmupRounds;
import java.util.OptionalInt;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code ./relay bench update}: the whole update, on this machine or with {@code --hosts}. */
@Command(
        name = "update",
        header = "A whole update through real loaders, against the machine's bounds.",
        description = {
            "A whole update through real loaders: update_vs_bound against memcpy and"
                    + " loopback-socket rates measured in the same run, store_read_ratio, the"
                    + " naive baseline, verify_ms and objects_verified.",
            "With --engine mooncake the same scenario runs twice in the run, first on a lab"
                    + " on the built-in engine, then on one whose every service runs on the"
                    + " real Mooncake Store and Transfer Engine (tcp transport; a"
                    + " mooncake_master of the pinned wheel in a network namespace of its own,"
                    + " root only). The line's figures are Mooncake's (engine: mooncake;"
                    + " naive_update_s null: the naive readers register their own staging,"
                    + " which Mooncake's agents cannot map), beside the built-in engine's"
                    + " builtin_update_s, builtin_cold_update_s, builtin_rounds_update_s,"
                    + " builtin_store_read_ratio and builtin_update_vs_bound, and"
                    + " mooncake_vs_builtin = builtin_update_s / update_s (above 1.0: Mooncake"
                    + " updated faster)."
        })
final class BenchUpdateCommand extends LabCommand {
    @Mixin final Flags.Model model = new Flags.Model("qwen2.5-0.5b");

    @Mixin final Flags.Rollout rollout = new Flags.Rollout(4, 2);

    @Mixin Flags.RolloutMode mode;

    @Option(
            names = "--warmup",
            paramLabel = "N",
            converter = Values.NonNegative.class,
            description =
                    "Rounds before the measured ones; default: until the JIT has settled (two"
                            + " rounds in a row with the JVMs' compilers under 3%% of the"
                            + " lab's CPU; at most 60; 12 with --hosts, whose services it"
                            + " cannot see).")
    Integer warmup;

    @Option(
            names = "--repeat",
            paramLabel = "N",
            defaultValue = "3",
            converter = Values.Positive.class,
            description =
                    "Measured rounds after the warm-up; the median one is reported; default"
                            + " ${DEFAULT-VALUE}.")
    int repeat;

    @Mixin Flags.Seed seed;

    @Option(
            names = "--no-checksums",
            description =
                    "Turn the CRC32C proof off in control-api and every loader, for"
                            + " comparison only.")
    boolean noChecksums;

    @Option(
            names = "--no-verify",
            description = "Skip checking the engines' bytes against the trainer's.")
    boolean noVerify;

    @Option(
            names = "--direct-install",
            paramLabel = "I",
            defaultValue = "in-place",
            converter = Values.DirectInstall.class,
            completionCandidates = Values.DirectInstall.class,
            description =
                    "How direct workers install: in-place (the engine pauses through the"
                            + " update) or staged (it serves through the fetch); compat"
                            + " engines always serve through it. ${COMPLETION-CANDIDATES};"
                            + " default ${DEFAULT-VALUE}.")
    String directInstall;

    @Option(
            names = "--hosts",
            description =
                    "On the multi-host lab (root only), every host's data-plane link shaped"
                            + " to --link-gbps both ways: update_s, naive_update_s,"
                            + " predicted_update_s (the cluster model) and"
                            + " update_vs_predicted.")
    boolean hosts;

    @Option(
            names = "--link-gbps",
            paramLabel = "G",
            defaultValue = "2",
            converter = Values.PositiveNumber.class,
            description =
                    "With --hosts: each host's link rate, Gbit/s each way; default"
                            + " ${DEFAULT-VALUE}.")
    double linkGbps;

    @Mixin Flags.Engine engine;

    @Mixin BenchCommand.Services services;

    @Override
    Invocation<UpdateBench.Options> invocation() {
        UpdateBench.Options options =
                new UpdateBench.Options(
                        model.model,
                        rollout.instances,
                        rollout.tp,
                        mode.parsed(),
                        seed.seed,
                        new WarmupRounds(
                                warmup == null ? OptionalInt.empty() : OptionalInt.of(warmup),
                                repeat),
                        UpdateBench.Install.of(directInstall.equals("staged"), mode.parsed()),
                        !noChecksums,
                        !noVerify,
                        engine.dataplane(),
                        hosts,
                        linkGbps,
                        services.root());
        return new Invocation<>(UpdateBench.class, options, UpdateBench::run);
    }

    @Override
    RedisNeed redis() {
        // --hosts: the Redis host runs a redis-server of its own.
        return hosts ? RedisNeed.SERVER : services.redis();
    }

    @Override
    void check() {
        onlyWith(hosts, "--hosts", "--link-gbps");
        onlyWith(
                !hosts,
                "no --hosts (the hosts run their own Redis and always check every byte with"
                        + " the proof on)",
                "--redis-host",
                "--redis-port",
                "--no-checksums",
                "--no-verify");
        refuseMooncakeWithHosts(engine, hosts, "the multi-host update bench");
    }
}
