package io.weightrelay.lab.cli;

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
            BenchCommand.Update.class,
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
        String root;

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
    }

    /** The flags that shape the control-api a benchmark starts. */
    static final class ControlApi {
        @Option(
                names = "--control-jar",
                paramLabel = "JAR",
                description = "control-api's jar; default the checkout's.")
        String controlJar;

        @Option(
                names = "--control-jvm-arg",
                paramLabel = "ARG",
                description = "A JVM flag for control-api (repeat; --control-jvm-arg=-Xmx2g).")
        List<String> controlJvmArgs;

        @Option(
                names = "--control-arg",
                paramLabel = "ARG",
                description = "A Spring flag for control-api (repeat; --control-arg=--a.b=c).")
        List<String> controlArgs;

        @Option(names = "--keep-redis", description = "Leave the run's Redis keys behind.")
        boolean keepRedis;

        @Option(names = "--keep-logs", description = "Keep the services' logs.")
        boolean keepLogs;
    }

    @Command(
            name = "dataplane",
            header = "The data plane's engine against memcpy and tcp (--hosts: between two hosts).",
            description = {
                "native-dataplane's engine against memcpy and loopback tcp, on this host.",
                "With --hosts: the engine's authenticated tcp transport between two hosts of this"
                        + " machine against a plain socket between the same two (root only):"
                        + " tcp_vs_socket, authenticated.",
                "With --engine mooncake: the real Mooncake Transfer Engine (tcp transport, two"
                        + " agents of the pinned wheel in a network namespace of their own with a"
                        + " mooncake_master, root only) writing and reading --size bytes between"
                        + " two shared-memory segments, against a plain loopback socket with the"
                        + " same parallelism (one stream: Mooncake moves one request over one"
                        + " connection) from and into the same memory, rounds alternating:"
                        + " tcp_vs_socket; and the Store's get_into_ranges of a --size object in"
                        + " 1 MiB ranges from the other agent's segment: tcp_get_ranges_vs_socket;"
                        + " small_write_us, one 4 KiB write's round trip through the agent."
            },
            exitCodeList = {
                RelayCommand.EXIT_OK,
                "1:with --hosts: the intruder with a wrong secret was not refused",
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
                description = "Without --hosts: Redis; default redis://127.0.0.1:6379.")
        String redis;

        @Option(names = "--hosts", description = "Between two hosts of this machine (root only).")
        boolean hosts;

        @Option(
                names = "--streams",
                paramLabel = "S",
                converter = Values.Positive.class,
                description = "With --hosts: tcp streams per peer; default 2.")
        Integer streams;

        @Mixin Flags.HostsPrefix prefix;

        @Mixin Flags.Engine engine;

        Dataplane() {
            super("io.weightrelay.dataplane.bench.DataplaneBench", ValueStyle.SPACED);
        }

        @Override
        String entryPoint() {
            if (hosts) {
                return "io.weightrelay.lab.bench.HostsDataplaneBench";
            }
            return engine.mooncake()
                    ? "io.weightrelay.lab.bench.MooncakeDataplaneBench"
                    : super.entryPoint();
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
        String publisherJar;

        @Option(
                names = "--publisher-jvm-arg",
                paramLabel = "ARG",
                description = "A JVM flag for every publisher (repeat).")
        List<String> publisherJvmArgs;

        @Option(
                names = "--publisher-arg",
                paramLabel = "ARG",
                description = "A Spring flag for every publisher (repeat).")
        List<String> publisherArgs;

        @Mixin Services services;

        @Mixin ControlApi controlApi;

        Publish() {
            super("io.weightrelay.lab.bench.PublishBench", ValueStyle.JOINED);
        }

        @Override
        RedisNeed redis() {
            return services.redis();
        }
    }

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
    static final class Update extends LabCommand {
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
                converter = Values.PositiveNumber.class,
                description = "With --hosts: each host's link rate, Gbit/s each way; default 2.")
        Double linkGbps;

        @Mixin Flags.Engine engine;

        @Mixin Services services;

        Update() {
            super("io.weightrelay.lab.bench.UpdateBench", ValueStyle.JOINED);
        }

        @Override
        String entryPoint() {
            return hosts ? "io.weightrelay.lab.bench.HostsUpdateBench" : super.entryPoint();
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

        @Mixin Services services;

        @Mixin ControlApi controlApi;

        ControlPlane() {
            super("io.weightrelay.lab.bench.ControlPlaneBench", ValueStyle.JOINED);
        }

        @Override
        RedisNeed redis() {
            return services.redis();
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
        String dir;

        @Mixin Flags.Seed seed;

        @Mixin Services services;

        Checkpoint() {
            super("io.weightrelay.lab.bench.CheckpointBench", ValueStyle.JOINED);
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

        Python() {
            super("io.weightrelay.lab.bench.PythonBench", ValueStyle.JOINED);
        }

        @Override
        RedisNeed redis() {
            return RedisNeed.answering(null, null);
        }
    }
}
