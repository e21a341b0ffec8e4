package io.weightrelay.lab.cli;

import io.weightrelay.lab.bench.BenchServices;
import io.weightrelay.lab.bench.CheckpointBench;
import io.weightrelay.lab.bench.ControlPlaneBench;
import io.weightrelay.lab.bench.DataplaneBench;
import io.weightrelay.lab.bench.DataplaneOptions;
import io.weightrelay.lab.bench.PublishBench;
import io.weightrelay.lab.bench.PythonBench;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code ./relay bench <kind>}: each benchmark prints one JSON line, the last on stdout. */
@Command(
        name = "bench",
        header =
                "The benchmarks: planner, dataplane, publish, update, control-plane, checkpoint, python.",
        synopsisSubcommandLabel = "<kind>",
        description = {
            "The benchmarks. Each prints one JSON line, the last line on stdout; narration goes to"
                    + " stderr.",
            "./relay bench <kind> --help shows a kind's flags."
        },
        subcommands = {
            BenchPlannerCommand.class,
            BenchCommand.Dataplane.class,
            BenchCommand.Publish.class,
            BenchUpdateCommand.class,
            BenchCommand.ControlPlane.class,
            BenchCommand.Checkpoint.class,
            BenchCommand.Python.class
        },
        exitCodeList = {RelayCommand.EXIT_OK, RelayCommand.EXIT_CHECK, RelayCommand.EXIT_USAGE})
final class BenchCommand extends RelayCommand {

    /**
     * Where the benchmarks that start services find Redis and the checkout. The Redis flags are the
     * launcher's: it uses that Redis when it answers, else starts one for the run (as for every
     * command that starts services), and hands the bench the one it chose.
     */
    static final class Services {
        @Option(
                names = "--root",
                paramLabel = "DIR",
                description = "The checkout whose service jars run; default this one.")
        Path root;

        @Option(
                names = "--redis-host",
                paramLabel = "HOST",
                description =
                        "Redis; default $RELAY_LAB_REDIS's host, else 127.0.0.1. When it does not"
                                + " answer, a redis-server of the run's own is started.")
        String redisHost;

        @Option(
                names = "--redis-port",
                paramLabel = "PORT",
                converter = Values.Port.class,
                description = "Default $RELAY_LAB_REDIS's port, else 6379.")
        Integer redisPort;

        /** The Redis these flags ask for (null where not given: the lab's configured one). */
        RedisNeed redis() {
            return RedisNeed.answering(redisHost, redisPort);
        }

        /** {@code --root}: the checkout given, else the one this JVM runs from. */
        Path root() {
            return (root != null ? root : ServiceProcess.home()).toAbsolutePath();
        }
    }

    /**
     * The flags of a benchmark that starts control-api itself: where it runs ({@link Services}),
     * then what shapes that control-api.
     */
    static final class ControlApi {
        @Mixin Services site;

        @Option(
                names = "--control-jar",
                paramLabel = "JAR",
                description = "control-api's jar; default the checkout's.")
        Path controlJar;

        @Option(
                names = "--control-jvm-arg",
                paramLabel = "ARG",
                description = "A JVM flag for control-api (repeat; --control-jvm-arg=-Xmx2g).")
        List<String> controlJvmArgs = List.of();

        @Option(
                names = "--control-arg",
                paramLabel = "ARG",
                description = "A Spring flag for control-api (repeat; --control-arg=--a.b=c).")
        List<String> controlArgs = List.of();

        @Option(names = "--keep-redis", description = "Leave the run's Redis keys behind.")
        boolean keepRedis;

        @Option(names = "--keep-logs", description = "Keep the services' logs.")
        boolean keepLogs;

        /** These flags, for the services under {@code --root}. */
        BenchServices services() {
            return new BenchServices(
                    site.root(), controlJar, controlJvmArgs, controlArgs, keepRedis, keepLogs);
        }
    }

    @Command(
            name = "dataplane",
            header = "A data-plane engine against memcpy and a plain socket (--hosts, --engine).",
            description = {
                "One program; where the two ends run (--hosts) and the engine (--engine) pick the"
                        + " figures, each against plain yardsticks on the same memory with the same"
                        + " parallelism, rounds alternating, the median of --repeats after one"
                        + " warm-up each.",
                "By default: the built-in engine's local and tcp transports in this JVM against"
                        + " memcpy and a loopback socket, and the Store's put and ranged gets.",
                "With --hosts: the engine's authenticated tcp transport between two hosts of this"
                        + " machine against a plain socket between the same two (root only):"
                        + " tcp_vs_socket, authenticated; and against memcpy on the source host:"
                        + " tcp_vs_memcpy.",
                "With --engine mooncake: the real Mooncake Transfer Engine (tcp transport, two"
                        + " agents of the pinned wheel in a network namespace of their own with a"
                        + " mooncake_master, root only) writing and reading --size bytes between"
                        + " two shared-memory segments, against a plain loopback socket with the"
                        + " same parallelism (one stream: Mooncake moves one request over one"
                        + " connection) from and into the same memory, rounds alternating:"
                        + " tcp_vs_socket, tcp_vs_memcpy; and the Store's get_into_ranges of a --size object in"
                        + " 1 MiB ranges from the other agent's segment: tcp_get_ranges_vs_socket;"
                        + " small_write_us, one 4 KiB write's round trip through the agent."
            },
            exitCodeList = {
                RelayCommand.EXIT_OK,
                "1:a check failed: the tcp peers were not authenticated (with --hosts: the"
                        + " intruder with a wrong secret was not refused), a put into the own"
                        + " segment sent bytes over tcp (put_tcp_bytes), or a Mooncake write was"
                        + " not byte-exact (write_exact)",
                RelayCommand.EXIT_USAGE,
                RelayCommand.EXIT_CANNOT
            })
    static final class Dataplane extends LabCommand {
        @Option(
                names = "--size",
                paramLabel = "BYTES",
                converter = Values.PositiveLong.class,
                description = "Bytes per transfer; default 268435456 (1073741824 with --hosts).")
        Long size;

        @Option(
                names = "--repeats",
                paramLabel = "N",
                defaultValue = "5",
                converter = Values.Positive.class,
                description = "Rounds; the median is reported; default ${DEFAULT-VALUE}.")
        int repeats;

        @Option(
                names = "--redis",
                paramLabel = "URI",
                defaultValue = "redis://127.0.0.1:6379",
                description = "Without --hosts: Redis; default ${DEFAULT-VALUE}.")
        String redis;

        @Option(names = "--hosts", description = "Between two hosts of this machine (root only).")
        boolean hosts;

        @Option(
                names = "--streams",
                paramLabel = "S",
                defaultValue = "2",
                converter = Values.Positive.class,
                description = "With --hosts: tcp streams per peer; default ${DEFAULT-VALUE}.")
        int streams;

        @Mixin Flags.HostsPrefix prefix;

        @Mixin Flags.Engine engine;

        @Override
        Invocation<DataplaneOptions> invocation() {
            return new Invocation<>(
                    DataplaneBench.class,
                    new DataplaneOptions(
                            size != null ? size : hosts ? 1L << 30 : 256L << 20,
                            repeats,
                            redis,
                            streams,
                            prefix.prefix,
                            hosts,
                            engine.dataplane()),
                    DataplaneBench::run);
        }

        @Override
        RedisNeed redis() {
            // --hosts: the Redis host runs a redis-server of its own; without, --redis as given.
            return hosts ? RedisNeed.SERVER : RedisNeed.NONE;
        }

        @Override
        void check() {
            onlyWith(hosts, "--hosts", "--streams", "--prefix");
            onlyWith(!hosts, "no --hosts (the hosts run their own Redis)", "--redis");
            refuseMooncakeWithHosts(engine, hosts, "the two-host data-plane bench");
        }
    }

    @Command(
            name = "publish",
            header = "A publish through real publishers and control-api.",
            description = {
                "A publish through real publishers and control-api: publish_vs_memcpy,"
                        + " network_bytes."
            })
    static final class Publish extends LabCommand {
        @Mixin final Flags.Model model = new Flags.Model("qwen2.5-0.5b");

        @Mixin final Flags.TrainerNodes trainerNodes = new Flags.TrainerNodes(2);

        @Option(
                names = "--repeat",
                paramLabel = "N",
                defaultValue = "3",
                converter = Values.NonNegative.class,
                description = "Measured publishes (at least 1 run); default ${DEFAULT-VALUE}.")
        int repeat;

        @Mixin final Flags.Warmup warmup = new Flags.Warmup(2);

        @Option(
                names = "--max-batch-bytes",
                paramLabel = "BYTES",
                defaultValue = "536870912",
                converter = Values.PositiveLong.class,
                description = "Default ${DEFAULT-VALUE}.")
        long maxBatchBytes;

        @Option(
                names = "--in-flight",
                paramLabel = "N",
                defaultValue = "4",
                converter = Values.Positive.class,
                description = "Batches in flight per rank; default ${DEFAULT-VALUE}.")
        int inFlight;

        @Mixin Flags.Dtypes dtypes;

        @Option(
                names = "--staging-mode",
                paramLabel = "S",
                defaultValue = "segment",
                converter = Values.StagingMode.class,
                completionCandidates = Values.StagingMode.class,
                description = "${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}.")
        String stagingMode;

        @Mixin Flags.Seed seed;

        @Option(
                names = "--publisher-jar",
                paramLabel = "JAR",
                description = "publisher-service's jar; default the checkout's.")
        Path publisherJar;

        @Option(
                names = "--publisher-jvm-arg",
                paramLabel = "ARG",
                description = "A JVM flag for every publisher (repeat).")
        List<String> publisherJvmArgs = List.of();

        @Option(
                names = "--publisher-arg",
                paramLabel = "ARG",
                description = "A Spring flag for every publisher (repeat).")
        List<String> publisherArgs = List.of();

        @Mixin ControlApi controlApi;

        @Override
        Invocation<PublishBench.Options> invocation() {
            return new Invocation<>(
                    PublishBench.class,
                    new PublishBench.Options(
                            model.model,
                            trainerNodes.trainerNodes,
                            repeat,
                            warmup.warmup,
                            maxBatchBytes,
                            inFlight,
                            dtypes.trainer(),
                            dtypes.rollout(),
                            stagingMode,
                            seed.seed,
                            publisherJar,
                            publisherJvmArgs,
                            publisherArgs,
                            controlApi.services()),
                    PublishBench::run);
        }

        @Override
        RedisNeed redis() {
            return controlApi.site.redis();
        }
    }

    @Command(
            name = "control-plane",
            header = "The control plane alone at scale (Kimi-K2 size), no tensor bytes.",
            description = {
                "The control plane alone at scale, no tensor bytes: control-api (-Xmx1g) with one"
                        + " publisher per trainer node and one loader per instance played over"
                        + " REST. The JSON line names a failing step in failed_step."
            },
            exitCodeList = {
                RelayCommand.EXIT_OK,
                "1:a step failed (failed_step names it)",
                RelayCommand.EXIT_USAGE,
                RelayCommand.EXIT_CANNOT
            })
    static final class ControlPlane extends LabCommand {
        @Mixin final Flags.Model model = new Flags.Model("kimi-k2");

        @Option(
                names = "--tensors",
                paramLabel = "N",
                defaultValue = "0",
                converter = Values.NonNegative.class,
                description = "Scale the model to about N tensors; 0 (default) keeps it whole.")
        int tensors;

        @Mixin final Flags.TrainerNodes trainerNodes = new Flags.TrainerNodes(32);

        @Mixin final Flags.Rollout rollout = new Flags.Rollout(32, 8);

        @Option(
                names = "--ep",
                paramLabel = "E",
                defaultValue = "0",
                converter = Values.NonNegative.class,
                description = "Expert-parallel ranks; 0 (default) as in bench planner.")
        int ep;

        @Option(
                names = "--rollout-nodes",
                paramLabel = "R",
                converter = Values.Positive.class,
                description = "Default instances x tp / 8, at least 1.")
        Integer rolloutNodes;

        @Option(
                names = "--mode",
                paramLabel = "MODE",
                defaultValue = "direct",
                converter = Values.StrictMode.class,
                completionCandidates = Values.StrictMode.class,
                description = "${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}.")
        String mode;

        @Option(
                names = "--control-heap",
                paramLabel = "SIZE",
                defaultValue = "1g",
                description = "control-api's -Xmx; default ${DEFAULT-VALUE}.")
        String controlHeap;

        @Mixin final Flags.Warmup warmup = new Flags.Warmup(1);

        @Option(
                names = "--register-chunk",
                paramLabel = "N",
                defaultValue = "256",
                converter = Values.Positive.class,
                description = "Objects per register call; default ${DEFAULT-VALUE}.")
        int registerChunk;

        @Option(
                names = "--heartbeat-seconds",
                paramLabel = "S",
                defaultValue = "5",
                converter = Values.PositiveLong.class,
                description = "Default ${DEFAULT-VALUE}.")
        long heartbeatSeconds;

        @Option(
                names = "--call-timeout-seconds",
                paramLabel = "S",
                defaultValue = "300",
                converter = Values.PositiveLong.class,
                description = "Default ${DEFAULT-VALUE}.")
        long callTimeoutSeconds;

        @Mixin ControlApi controlApi;

        @Override
        Invocation<ControlPlaneBench.Options> invocation() {
            return new Invocation<>(
                    ControlPlaneBench.class,
                    new ControlPlaneBench.Options(
                            model.model,
                            tensors,
                            trainerNodes.trainerNodes,
                            rollout.instances,
                            rollout.tp,
                            ep,
                            rolloutNodes != null
                                    ? rolloutNodes
                                    : Math.max(1, rollout.instances * rollout.tp / 8),
                            Mode.parse(mode),
                            controlHeap,
                            warmup.warmup,
                            new ControlPlaneBench.Players(
                                    registerChunk,
                                    Duration.ofSeconds(heartbeatSeconds),
                                    Duration.ofSeconds(callTimeoutSeconds)),
                            controlApi.services()),
                    ControlPlaneBench::run);
        }

        @Override
        RedisNeed redis() {
            return controlApi.site.redis();
        }
    }

    @Command(
            name = "checkpoint",
            header = "Save a generation, restart from scratch, restore it, verify every byte.",
            description = {
                "A checkpoint through the real services: publish, save through the segment owners,"
                        + " a plain write + fsync of the same bytes for comparison, a full restart"
                        + " from scratch, restore from the directory alone, and an update verifying"
                        + " every byte."
            })
    static final class Checkpoint extends LabCommand {
        @Mixin final Flags.Model model = new Flags.Model("qwen2.5-0.5b");

        @Mixin final Flags.TrainerNodes trainerNodes = new Flags.TrainerNodes(2);

        @Option(
                names = "--dir",
                paramLabel = "D",
                description = "Where the checkpoint goes; default a fresh temporary directory.")
        Path dir;

        @Mixin Flags.Seed seed;

        @Mixin Services services;

        @Override
        Invocation<CheckpointBench.Options> invocation() {
            return new Invocation<>(
                    CheckpointBench.class,
                    new CheckpointBench.Options(
                            model.model,
                            trainerNodes.trainerNodes,
                            dir,
                            seed.seed,
                            services.root()),
                    CheckpointBench::run);
        }

        @Override
        RedisNeed redis() {
            return services.redis();
        }
    }

    @Command(
            name = "python",
            header = "The Python package against the Java clients on one lab.",
            description = {
                "The Python package against the Java clients on one lab: publish and update"
                        + " seconds of each, bit_exact (python/README.md)."
            })
    static final class Python extends LabCommand {
        @Option(
                names = "--model",
                paramLabel = "M",
                converter = Values.Model.class,
                completionCandidates = Values.Model.class,
                description =
                        "Catalogued model: ${COMPLETION-CANDIDATES}; default qwen2.5-0.5b (tiny"
                                + " with --serve).")
        String model;

        @Mixin final Flags.Rollout rollout = new Flags.Rollout(2, 1);

        @Mixin Flags.RolloutMode mode;

        @Option(
                names = "--repeat",
                paramLabel = "N",
                defaultValue = "3",
                converter = Values.Positive.class,
                description = "Rounds of each; default ${DEFAULT-VALUE}.")
        int repeat;

        @Option(
                names = "--python",
                paramLabel = "EXE",
                description =
                        "The Python to run; default $WEIGHT_RELAY_VENV/bin/python"
                                + " (/opt/weight-relay/venv).")
        String python;

        @Option(
                names = "--serve",
                description =
                        "Start the lab, print its description as one JSON line and keep it up"
                                + " until stdin closes (for the Python tests).")
        boolean serve;

        @Override
        Invocation<PythonBench.Options> invocation() {
            return new Invocation<>(
                    PythonBench.class,
                    new PythonBench.Options(
                            model != null ? model : serve ? "tiny" : "qwen2.5-0.5b",
                            rollout.instances,
                            rollout.tp,
                            mode.parsed(),
                            repeat,
                            python,
                            serve),
                    PythonBench::run);
        }

        @Override
        RedisNeed redis() {
            return RedisNeed.answering(null, null);
        }
    }
}
