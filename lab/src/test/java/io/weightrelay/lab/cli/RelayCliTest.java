package io.weightrelay.lab.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.bench.BenchServices;
import io.weightrelay.lab.bench.CheckpointBench;
import io.weightrelay.lab.bench.ControlPlaneBench;
import io.weightrelay.lab.bench.DataplaneOptions;
import io.weightrelay.lab.bench.PublishBench;
import io.weightrelay.lab.bench.PythonBench;
import io.weightrelay.lab.bench.UpdateBench;
import io.weightrelay.lab.bench.WarmupRounds;
import io.weightrelay.lab.demo.Demo;
import io.weightrelay.lab.faults.FaultSuite;
import io.weightrelay.lab.rollout.SimulatedRollout;
import io.weightrelay.lab.trainer.SimulatedTrainer;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.testkit.process.ServiceProcess;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.RecordComponent;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * {@code ./relay}'s command line without starting anything: every command and subcommand answers
 * {@code --help}, refuses unknown flags, bad values and bad numbers with exit 2 naming what is
 * wrong and what is valid, and hands what it accepts, typed and with its defaults, to the code that
 * runs the command. The commands are enumerated from the tree itself, so a new one is covered.
 */
class RelayCliTest {

    /** What one {@code ./relay} call printed, returned and launched. */
    record Run(int code, String out, String err, List<Launch> launched) {
        Launch only() {
            assertThat(launched).as("one launch; stderr: %s", err).hasSize(1);
            return launched.get(0);
        }
    }

    record Launch(String command, Invocation<?> invocation, RedisNeed redis) {
        /** The class whose entry point runs. */
        String entryPoint() {
            return invocation.runs().getName();
        }

        /** The options of a command whose code takes them typed. */
        <O> O options(Class<O> type) {
            assertThat(invocation.options()).isInstanceOf(type);
            return type.cast(invocation.options());
        }
    }

    static Run relay(String... args) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<Launch> launched = new ArrayList<>();
        int code =
                RelayCli.execute(
                        args,
                        new PrintStream(out, true, StandardCharsets.UTF_8),
                        new PrintStream(err, true, StandardCharsets.UTF_8),
                        (command, invocation, redis) ->
                                launched.add(new Launch(command, invocation, redis)));
        return new Run(
                code,
                out.toString(StandardCharsets.UTF_8),
                err.toString(StandardCharsets.UTF_8),
                launched);
    }

    /** Every command path: "demo", "bench update", ..., and "help". */
    static List<List<String>> commands() {
        List<List<String>> all = new ArrayList<>();
        walk(RelayCli.commandLine(), new ArrayList<>(), all);
        return all;
    }

    private static void walk(CommandLine command, List<String> path, List<List<String>> all) {
        for (var sub : command.getSubcommands().entrySet()) {
            List<String> here = new ArrayList<>(path);
            here.add(sub.getKey());
            all.add(here);
            walk(sub.getValue(), here, all);
        }
    }

    static Stream<List<String>> everyCommand() {
        return commands().stream();
    }

    static Stream<List<String>> runnableCommands() {
        return commands().stream().filter(p -> !p.equals(List.of("bench")));
    }

    /** {@code bench planner} with every flag it requires but {@code --tp} (or {@code --ep}). */
    private static final List<String> PLANNER =
            List.of(
                    "bench",
                    "planner",
                    "--model=tiny",
                    "--trainer-nodes=1",
                    "--rollout-nodes=1",
                    "--instances=1",
                    "--mode=direct",
                    "--nic-gbps=400");

    private static String[] with(List<String> path, String... more) {
        List<String> args = new ArrayList<>(path);
        args.addAll(List.of(more));
        return args.toArray(String[]::new);
    }

    private static CommandLine find(List<String> path) {
        CommandLine c = RelayCli.commandLine();
        for (String name : path) {
            c = c.getSubcommands().get(name);
        }
        return c;
    }

    @Test
    void theTreeHoldsEveryCommandRelayDispatchedBefore() {
        assertThat(commands())
                .extracting(p -> String.join(" ", p))
                .contains(
                        "demo",
                        "faults",
                        "trainer",
                        "rollout",
                        "bench",
                        "bench planner",
                        "bench dataplane",
                        "bench publish",
                        "bench update",
                        "bench control-plane",
                        "bench checkpoint",
                        "bench python",
                        "help");
    }

    @ParameterizedTest
    @MethodSource("everyCommand")
    void helpExitsZeroAndNamesEveryOption(List<String> path) throws Exception {
        Run run = relay(with(path, "--help"));

        assertThat(run.code()).as(run.err()).isZero();
        assertThat(run.launched()).isEmpty();
        assertThat(run.out()).contains("Usage: relay " + String.join(" ", path));
        for (OptionSpec option : find(path).getCommandSpec().options()) {
            assertThat(run.out()).contains(option.longestName());
        }
        if (!path.equals(List.of("help"))) {
            assertThat(run.out()).contains("Exit codes:").contains("2   usage error");
        }
    }

    @ParameterizedTest
    @MethodSource("everyCommand")
    void anUnknownFlagExitsTwoNamingIt(List<String> path) throws Exception {
        Run run = refused(with(path, "--frobnicate"), "Unknown option: '--frobnicate'");
        assertThat(run.out()).isEmpty();
    }

    @ParameterizedTest
    @MethodSource("runnableCommands")
    void aStrayArgumentExitsTwo(List<String> path) throws Exception {
        refused(with(path, "sideways"), "'sideways'");
    }

    /** Runs {@code args}: exit 2, nothing launched, the error names {@code named}. */
    private static Run refused(String[] args, String named) throws Exception {
        Run run = relay(args);
        assertThat(run.code()).isEqualTo(2);
        assertThat(run.launched()).isEmpty();
        assertThat(run.err()).contains(named);
        return run;
    }

    @Test
    void helpWinsOverEveryOtherFlag() throws Exception {
        Run run = relay("demo", "--json", "--help");

        assertThat(run.code()).isZero();
        assertThat(run.launched()).as("the demo must not run").isEmpty();
        assertThat(run.out()).contains("Usage: relay demo").contains("--json");

        assertThat(relay("bench", "update", "--mode", "sideways", "--help").code()).isZero();
        assertThat(relay("help", "faults").out()).contains("Usage: relay faults");
        assertThat(relay("--help").out()).contains("demo").contains("bench").contains("faults");
    }

    static Stream<Arguments> badChoices() {
        return Stream.of(
                Arguments.of(List.of("demo", "--mode", "sideways"), "compat, direct, both"),
                Arguments.of(List.of("demo", "--engine", "rdma"), "builtin, mooncake"),
                Arguments.of(List.of("bench", "update", "--engine", "rdma"), "builtin, mooncake"),
                Arguments.of(
                        List.of("bench", "dataplane", "--engine", "rdma"), "builtin, mooncake"),
                Arguments.of(List.of("rollout", "--mode", "sideways"), "compat, direct"),
                Arguments.of(List.of("bench", "update", "--mode", "sideways"), "compat, direct"),
                Arguments.of(List.of("bench", "planner", "--mode=sideways"), "compat, direct"),
                Arguments.of(List.of("bench", "python", "--mode", "sideways"), "compat, direct"),
                Arguments.of(
                        List.of("bench", "control-plane", "--mode", "compatibility"),
                        "direct, compat"),
                Arguments.of(List.of("demo", "--model", "gpt-9"), "qwen2.5-0.5b"),
                Arguments.of(List.of("faults", "--model", "gpt-9"), "kimi-k2"),
                Arguments.of(List.of("bench", "publish", "--trainer-dtype", "bf17"), "fp32, bf16"),
                Arguments.of(List.of("trainer", "--rollout-dtype", "bf17"), "fp8_e4m3"),
                Arguments.of(
                        List.of("bench", "publish", "--staging-mode", "disk"), "segment, file"),
                Arguments.of(
                        List.of("faults", "--only", "no-such-case"),
                        "loader-restarted-loads-active, byte-flipped-after-commit"));
    }

    @ParameterizedTest
    @MethodSource("badChoices")
    void aBadValueExitsTwoNamingTheValidChoices(List<String> args, String valid) throws Exception {
        Run run = relay(args.toArray(String[]::new));

        assertThat(run.code()).isEqualTo(2);
        assertThat(run.launched()).isEmpty();
        assertThat(run.err()).contains("valid: ").contains(valid);
    }

    static Stream<Arguments> badNumbers() {
        return Stream.of(
                Arguments.of(List.of("demo", "--instances", "four"), "--instances", "four"),
                Arguments.of(List.of("demo", "--tp", "0"), "--tp", "at least 1"),
                Arguments.of(List.of("rollout", "--instances", "-1"), "--instances", "-1"),
                Arguments.of(List.of("trainer", "--steps", "1.5"), "--steps", "1.5"),
                Arguments.of(List.of("trainer", "--seed", "x"), "--seed", "'x'"),
                Arguments.of(List.of("bench", "dataplane", "--size", "1GB"), "--size", "1GB"),
                Arguments.of(
                        List.of("bench", "planner", "--nic-gbps", "fast"), "--nic-gbps", "fast"),
                Arguments.of(
                        List.of("bench", "update", "--redis-port", "70000"),
                        "--redis-port",
                        "port"),
                Arguments.of(
                        List.of("bench", "update", "--hosts", "--link-gbps", "0"),
                        "--link-gbps",
                        "must be above 0"),
                Arguments.of(
                        List.of("bench", "update", "--hosts", "--link-gbps", "fast"),
                        "--link-gbps",
                        "'fast' is not a number"),
                Arguments.of(
                        List.of("bench", "control-plane", "--tensors", "-5"),
                        "--tensors",
                        "at least 0"),
                Arguments.of(
                        List.of("bench", "checkpoint", "--trainer-nodes", "two"),
                        "--trainer-nodes",
                        "two"),
                Arguments.of(
                        List.of("bench", "publish", "--max-batch-bytes", "0"),
                        "--max-batch-bytes",
                        "at least 1"),
                Arguments.of(List.of("bench", "update", "--repeat", "0"), "--repeat", "at least 1"),
                Arguments.of(List.of("bench", "python", "--repeat", "many"), "--repeat", "many"));
    }

    @ParameterizedTest
    @MethodSource("badNumbers")
    void aBadNumberExitsTwoNamingTheFlag(List<String> args, String flag, String why)
            throws Exception {
        Run run = relay(args.toArray(String[]::new));

        assertThat(run.code()).isEqualTo(2);
        assertThat(run.launched()).isEmpty();
        assertThat(run.err()).contains(flag).contains(why);
    }

    @Test
    void missingOrMisplacedFlagsExitTwoSayingWhy() throws Exception {
        assertThat(relay("bench", "planner", "--model", "tiny").err())
                .contains("Missing required options")
                .contains("--trainer-nodes")
                .contains("--nic-gbps");
        assertThat(relay(PLANNER.toArray(String[]::new)).err()).contains("--tp").contains("--ep");
        List<String> fp4 = new ArrayList<>(PLANNER);
        fp4.addAll(List.of("--tp=2", "--rollout-dtype=fp4"));
        assertThat(relay(fp4.toArray(String[]::new)).err())
                .contains("'fp4' is not a rollout dtype; valid: bf16, fp8");
        List<String> noStages = new ArrayList<>(PLANNER);
        noStages.addAll(List.of("--tp=2", "--pp=0"));
        Run refusedStages = relay(noStages.toArray(String[]::new));
        assertThat(refusedStages.code()).isEqualTo(2);
        assertThat(refusedStages.err()).contains("--pp").contains("0");
        assertThat(relay("rollout", "--instances", "2").err()).contains("--loaders");
        assertThat(relay("rollout", "--instances", "2", "--loaders", "http://a").err())
                .contains("--loaders needs one URL per instance (2)");
        assertThat(relay("demo", "--prefix", "wr-x").err()).contains("--prefix needs --hosts");
        for (String kind : List.of("update", "dataplane")) {
            Run refused = relay("bench", kind, "--engine", "mooncake", "--hosts");
            assertThat(refused.code()).isEqualTo(2);
            assertThat(refused.launched()).isEmpty();
            assertThat(refused.err()).contains("--engine mooncake does not run with --hosts");
        }
        assertThat(relay("bench", "dataplane", "--streams", "4").err())
                .contains("--streams needs --hosts");
        assertThat(relay("bench", "dataplane", "--hosts", "--redis", "redis://x").err())
                .contains("--redis needs no --hosts");
        assertThat(relay("bench", "update", "--link-gbps", "2").err())
                .contains("--link-gbps needs --hosts");
        assertThat(relay("bench", "update", "--hosts", "--redis-port", "6380").err())
                .contains("--redis-port needs no --hosts");
        assertThat(relay("bench", "update", "--hosts", "--no-checksums").err())
                .contains("--no-checksums needs no --hosts");
        assertThat(relay("demo", "--mode", "direct", "--mode", "compat").code()).isEqualTo(2);
        assertThat(relay("demo", "--instances", "1").err())
                .contains("--mode both needs at least 2 instances (one per mode), got 1");
        assertThat(relay("demo", "--instances", "1", "--mode", "direct").only()).isNotNull();
        for (String[] args :
                List.of(
                        new String[] {"bench", "planner", "--model", "tiny"},
                        new String[] {"demo", "--prefix", "wr-x"},
                        new String[] {"bench", "dataplane", "--streams", "4"},
                        new String[] {"bench", "update", "--link-gbps", "2"},
                        new String[] {"bench", "update", "--hosts", "--no-verify"},
                        new String[] {"demo", "--instances", "1"})) {
            Run run = relay(args);
            assertThat(run.code()).isEqualTo(2);
            assertThat(run.launched()).isEmpty();
        }
    }

    @Test
    void noCommandOrAnUnknownOneExitsTwo() throws Exception {
        Run none = relay();
        assertThat(none.code()).isEqualTo(2);
        assertThat(none.err()).contains("which command?").contains("demo").contains("bench");

        Run bench = relay("bench");
        assertThat(bench.code()).isEqualTo(2);
        assertThat(bench.err()).contains("which kind?").contains("planner").contains("update");

        Run unknown = relay("demoo");
        assertThat(unknown.code()).isEqualTo(2);
        assertThat(unknown.err()).contains("'demoo'").contains("demo");

        assertThat(relay("bench", "speed").err()).contains("'speed'");
        assertThat(relay("help").code()).isZero();
        assertThat(relay("help", "bench", "update").out()).contains("Usage: relay bench update");
        Run noSuch = relay("help", "bench", "speed");
        assertThat(noSuch.code()).isEqualTo(2);
        assertThat(noSuch.err()).contains("relay bench: no command 'speed'; valid: planner");
        Run helpOfNoSuch = relay("demoo", "--help");
        assertThat(helpOfNoSuch.code()).isEqualTo(2);
        assertThat(helpOfNoSuch.err()).contains("relay: no command 'demoo'; valid: demo, faults");
        assertThat(relay("bench", "speed", "-h").code()).isEqualTo(2);
    }

    @Test
    void aCommandGivenNoFlagsGetsTheDefaultsItsHelpShows() throws Exception {
        // The defaults are written once, in the command: what --help shows is what runs.
        Launch demo = relay("demo").only();
        assertThat(demo.entryPoint()).isEqualTo("io.weightrelay.lab.demo.Demo");
        assertThat(demo.options(Demo.Options.class))
                .isEqualTo(
                        new Demo.Options(
                                "qwen2.5-0.5b",
                                4,
                                2,
                                List.of(Mode.COMPAT, Mode.DIRECT),
                                DataplaneEngine.BUILTIN,
                                false,
                                false,
                                "wr-lab"));
        assertThat(relay("faults").only().options(FaultSuite.Options.class))
                .isEqualTo(new FaultSuite.Options("tiny", List.of(), false, false));
        assertThat(relay("trainer").only().options(SimulatedTrainer.Options.class))
                .isEqualTo(
                        new SimulatedTrainer.Options(
                                "tiny",
                                "http://127.0.0.1:8080",
                                List.of("trainer-0000=http://127.0.0.1:8081"),
                                null,
                                1,
                                0,
                                1,
                                DType.BF16,
                                DType.BF16,
                                64L << 20));
        assertThat(
                        relay("rollout", "--loaders", "http://a,http://b,http://c,http://d")
                                .only()
                                .options(SimulatedRollout.Options.class))
                .isEqualTo(
                        new SimulatedRollout.Options(
                                "tiny",
                                4,
                                2,
                                2,
                                Mode.COMPAT,
                                List.of("http://a", "http://b", "http://c", "http://d"),
                                "http://127.0.0.1:8080",
                                "",
                                "lab",
                                null,
                                1,
                                1));
        UpdateBench.Options update =
                relay("bench", "update").only().options(UpdateBench.Options.class);
        assertThat(update)
                .isEqualTo(
                        new UpdateBench.Options(
                                "qwen2.5-0.5b",
                                4,
                                2,
                                Mode.COMPAT,
                                1,
                                new WarmupRounds(OptionalInt.empty(), 3),
                                UpdateBench.Install.of(false, Mode.COMPAT),
                                true,
                                true,
                                DataplaneEngine.BUILTIN,
                                false,
                                2.0,
                                ServiceProcess.home().toAbsolutePath()));
        Launch dataplane = relay("bench", "dataplane").only();
        assertThat(dataplane.entryPoint()).isEqualTo("io.weightrelay.lab.bench.DataplaneBench");
        assertThat(dataplane.options(DataplaneOptions.class))
                .isEqualTo(
                        new DataplaneOptions(
                                256L << 20,
                                5,
                                "redis://127.0.0.1:6379",
                                2,
                                "wr-lab",
                                false,
                                DataplaneEngine.BUILTIN));
        assertThat(relay("bench", "dataplane", "--hosts").only().options(DataplaneOptions.class))
                .isEqualTo(
                        new DataplaneOptions(
                                1L << 30,
                                5,
                                "redis://127.0.0.1:6379",
                                2,
                                "wr-lab",
                                true,
                                DataplaneEngine.BUILTIN));
        assertThat(relay("bench", "python").only().options(PythonBench.Options.class))
                .isEqualTo(
                        new PythonBench.Options("qwen2.5-0.5b", 2, 1, Mode.COMPAT, 3, null, false));
        assertThat(relay("bench", "python", "--serve").only().options(PythonBench.Options.class))
                .isEqualTo(new PythonBench.Options("tiny", 2, 1, Mode.COMPAT, 3, null, true));
        ControlPlaneBench.Options control =
                relay("bench", "control-plane").only().options(ControlPlaneBench.Options.class);
        assertThat(control.rolloutNodes()).as("instances x tp / 8").isEqualTo(32);
        assertThat(control.mode()).isEqualTo(Mode.DIRECT);
        assertThat(control.players())
                .isEqualTo(
                        new ControlPlaneBench.Players(
                                256, Duration.ofSeconds(5), Duration.ofSeconds(300)));
        assertThat(
                        relay("bench", "control-plane", "--instances", "2", "--tp", "2")
                                .only()
                                .options(ControlPlaneBench.Options.class)
                                .rolloutNodes())
                .as("at least 1")
                .isEqualTo(1);
        PublishBench.Options publish =
                relay("bench", "publish").only().options(PublishBench.Options.class);
        assertThat(publish.services())
                .isEqualTo(
                        new BenchServices(
                                ServiceProcess.home().toAbsolutePath(),
                                null,
                                List.of(),
                                List.of(),
                                false,
                                false));
        assertThat(publish.maxBatchBytes()).isEqualTo(536870912L);
        assertThat(publish.stagingMode()).isEqualTo("segment");
        CheckpointBench.Options checkpoint =
                relay("bench", "checkpoint").only().options(CheckpointBench.Options.class);
        assertThat(checkpoint.dir()).as("a fresh temporary directory").isNull();
        assertThat(checkpoint.trainerNodes()).isEqualTo(2);
    }

    @Test
    void theFlagsGivenReachTheCodeThatRunsTheCommand() throws Exception {
        Launch demo = relay("demo", "--mode=direct", "--hosts", "--json", "--model", "tiny").only();
        assertThat(demo.entryPoint()).isEqualTo("io.weightrelay.lab.demo.Demo");
        Demo.Options hostsDemo = demo.options(Demo.Options.class);
        assertThat(hostsDemo.modes()).containsExactly(Mode.DIRECT);
        assertThat(hostsDemo.json()).isTrue();
        assertThat(hostsDemo.model()).isEqualTo("tiny");
        assertThat(demo.command()).isEqualTo("relay demo");
        // Mooncake runs on the hosts too (issue 47): the flag reaches the multi-host demo.
        assertThat(
                        relay("demo", "--hosts", "--engine", "mooncake", "--json")
                                .only()
                                .options(Demo.Options.class)
                                .engine())
                .isEqualTo(DataplaneEngine.MOONCAKE);

        Launch faults =
                relay(
                                "faults",
                                "--json",
                                "--only=byte-flipped-after-commit,loader-killed-mid-apply")
                        .only();
        assertThat(faults.entryPoint()).isEqualTo("io.weightrelay.lab.faults.FaultSuite");
        assertThat(faults.options(FaultSuite.Options.class))
                .isEqualTo(
                        new FaultSuite.Options(
                                "tiny",
                                List.of("byte-flipped-after-commit", "loader-killed-mid-apply"),
                                false,
                                true));

        Launch mooncake = relay("bench", "dataplane", "--engine", "mooncake").only();
        assertThat(mooncake.entryPoint()).isEqualTo("io.weightrelay.lab.bench.DataplaneBench");
        assertThat(mooncake.options(DataplaneOptions.class).engine())
                .isEqualTo(DataplaneEngine.MOONCAKE);
        assertThat(mooncake.options(DataplaneOptions.class).hosts()).isFalse();
        Launch updateOnBoth = relay("bench", "update", "--engine", "mooncake").only();
        assertThat(updateOnBoth.entryPoint()).isEqualTo("io.weightrelay.lab.bench.UpdateBench");
        assertThat(updateOnBoth.options(UpdateBench.Options.class).engine())
                .isEqualTo(DataplaneEngine.MOONCAKE);

        Launch hosts = relay("bench", "dataplane", "--hosts", "--size", "1024").only();
        assertThat(hosts.entryPoint()).isEqualTo("io.weightrelay.lab.bench.DataplaneBench");
        assertThat(hosts.options(DataplaneOptions.class).size()).isEqualTo(1024);
        assertThat(hosts.options(DataplaneOptions.class).hosts()).isTrue();

        Launch shaped =
                relay("bench", "update", "--hosts", "--link-gbps", "3", "--mode", "direct").only();
        assertThat(shaped.entryPoint()).isEqualTo("io.weightrelay.lab.bench.UpdateBench");
        UpdateBench.Options shapedOptions = shaped.options(UpdateBench.Options.class);
        assertThat(shapedOptions.linkGbps()).isEqualTo(3.0);
        assertThat(shapedOptions.mode()).isEqualTo(Mode.DIRECT);
        assertThat(shapedOptions.install()).isEqualTo(new UpdateBench.Install(false, false));
        assertThat(
                        relay("bench", "update", "--hosts", "--direct-install", "staged")
                                .only()
                                .options(UpdateBench.Options.class)
                                .install())
                .isEqualTo(new UpdateBench.Install(true, true));
        UpdateBench.Options given =
                relay(
                                "bench",
                                "update",
                                "--warmup=0",
                                "--repeat",
                                "1",
                                "--no-checksums",
                                "--no-verify",
                                "--root",
                                "/tmp/checkout")
                        .only()
                        .options(UpdateBench.Options.class);
        assertThat(given.rounds()).isEqualTo(new WarmupRounds(OptionalInt.of(0), 1));
        assertThat(given.checksums()).isFalse();
        assertThat(given.verify()).isFalse();
        assertThat(given.root()).isEqualTo(Path.of("/tmp/checkout"));

        // A value that starts with "--" arrives whole, and a repeated flag keeps every value.
        Launch publish =
                relay(
                                "bench",
                                "publish",
                                "--model",
                                "tiny",
                                "--control-arg=--relay.update.timeout=5s",
                                "--control-arg",
                                "-Dx=y",
                                "--keep-logs")
                        .only();
        PublishBench.Options read = publish.options(PublishBench.Options.class);
        assertThat(read.model()).isEqualTo("tiny");
        assertThat(read.services().controlArgs())
                .containsExactly("--relay.update.timeout=5s", "-Dx=y");
        assertThat(read.services().keepLogs()).isTrue();
        assertThat(read.services().keepRedis()).isFalse();

        // A repeated --publisher keeps every value.
        Launch trainer =
                relay(
                                "trainer",
                                "--publisher",
                                "trainer-0000=http://127.0.0.1:8081",
                                "--publisher",
                                "trainer-0001=http://127.0.0.1:8091")
                        .only();
        SimulatedTrainer.Options t = trainer.options(SimulatedTrainer.Options.class);
        assertThat(t.publishers())
                .containsExactly(
                        "trainer-0000=http://127.0.0.1:8081", "trainer-0001=http://127.0.0.1:8091");
        assertThat(t.controlApi()).isEqualTo("http://127.0.0.1:8080");
        assertThat(t.token()).as("not given: the trainer's $RELAY_TRAINER_TOKEN").isNull();
    }

    /**
     * Every command that starts services gets its Redis from the launcher (issue 52): the lab's or
     * one of the run's own; the Redis flags are the launcher's, not the main's.
     */
    @Test
    void everyCommandThatStartsServicesSaysWhichRedisItNeeds() throws Exception {
        RedisNeed answering = new RedisNeed(RedisNeed.Kind.ANSWERING, null, null);
        RedisNeed server = new RedisNeed(RedisNeed.Kind.SERVER, null, null);
        RedisNeed none = new RedisNeed(RedisNeed.Kind.NONE, null, null);
        assertThat(relay("demo").only().redis()).isEqualTo(answering);
        assertThat(relay("demo", "--hosts").only().redis()).isEqualTo(server);
        assertThat(relay("faults").only().redis()).isEqualTo(server);
        for (String kind : List.of("publish", "update", "control-plane", "checkpoint", "python")) {
            assertThat(relay("bench", kind).only().redis()).as(kind).isEqualTo(answering);
        }
        assertThat(relay("bench", "update", "--hosts").only().redis()).isEqualTo(server);
        assertThat(relay("bench", "dataplane", "--hosts").only().redis()).isEqualTo(server);
        assertThat(relay("bench", "dataplane").only().redis()).isEqualTo(none);
        assertThat(relay(with(PLANNER, "--tp=1")).only().redis()).isEqualTo(none);

        Launch publish =
                relay(
                                "bench",
                                "publish",
                                "--redis-host",
                                "127.0.0.1",
                                "--redis-port=6390",
                                "--model",
                                "tiny")
                        .only();
        assertThat(publish.redis())
                .isEqualTo(new RedisNeed(RedisNeed.Kind.ANSWERING, "127.0.0.1", 6390));
        // the Redis flags are the launcher's: the bench's options have no Redis of their own
        assertThat(publish.options(PublishBench.Options.class).model()).isEqualTo("tiny");
    }

    /** Command lines from the README, the module READMEs and compose.yaml, as they are written. */
    static Stream<Arguments> documented() {
        return Stream.of(
                Arguments.of("demo", "io.weightrelay.lab.demo.Demo"),
                Arguments.of(
                        "demo --hosts --model tiny --instances 2 --json",
                        "io.weightrelay.lab.demo.Demo"),
                Arguments.of(
                        "bench planner --model kimi-k2 --trainer-nodes 32 --rollout-nodes 32"
                                + " --instances 32 --tp 8 --mode direct --nic-gbps 400",
                        "io.weightrelay.lab.bench.planner.PlannerBench"),
                Arguments.of(
                        "bench planner --model kimi-k2 --trainer-nodes 32 --rollout-nodes 16"
                                + " --instances 4 --ep 32 --dp-attention --rollout-dtype fp8"
                                + " --nics-per-node 8 --nic-gbps 400 --mode direct",
                        "io.weightrelay.lab.bench.planner.PlannerBench"),
                Arguments.of(
                        "bench dataplane --size 1073741824",
                        "io.weightrelay.lab.bench.DataplaneBench"),
                Arguments.of(
                        "bench dataplane --hosts --size 1073741824 --repeats 3 --streams 2",
                        "io.weightrelay.lab.bench.DataplaneBench"),
                Arguments.of(
                        "bench publish --model qwen2.5-0.5b --trainer-nodes 2",
                        "io.weightrelay.lab.bench.PublishBench"),
                Arguments.of(
                        "bench update --model qwen2.5-0.5b --instances 4 --tp 2 --mode compat"
                                + " --no-checksums",
                        "io.weightrelay.lab.bench.UpdateBench"),
                Arguments.of(
                        "bench update --hosts --link-gbps 2 --model qwen2.5-0.5b --instances 4"
                                + " --tp 2 --mode compat",
                        "io.weightrelay.lab.bench.UpdateBench"),
                Arguments.of(
                        "bench control-plane --model kimi-k2 --tensors 700 --trainer-nodes 32"
                                + " --instances 32 --tp 8 --mode direct",
                        "io.weightrelay.lab.bench.ControlPlaneBench"),
                Arguments.of(
                        "bench python --model qwen2.5-0.5b --instances 2 --tp 1 --mode compat"
                                + " --repeat 3",
                        "io.weightrelay.lab.bench.PythonBench"),
                Arguments.of(
                        "bench checkpoint --model qwen2.5-0.5b --dir /tmp/x --trainer-nodes 2",
                        "io.weightrelay.lab.bench.CheckpointBench"),
                Arguments.of(
                        "faults --json --model tiny --hosts --only loader-killed-mid-apply",
                        "io.weightrelay.lab.faults.FaultSuite"),
                Arguments.of(
                        "trainer --model tiny --control-api http://control-api:8080 --publisher"
                                + " trainer-0000=http://publisher-0:8081 --steps 1 --first-step 0"
                                + " --token t0k3n",
                        "io.weightrelay.lab.trainer.SimulatedTrainer"),
                Arguments.of(
                        "rollout --model tiny --instances 1 --tp 2 --rollout-nodes 1 --mode compat"
                                + " --loaders http://loader-0:8082 --control-url"
                                + " http://control-api:8080 --token t0k3n",
                        "io.weightrelay.lab.rollout.SimulatedRollout"));
    }

    @ParameterizedTest
    @MethodSource("documented")
    void everyDocumentedCommandLineStillRuns(String line, String entryPoint) throws Exception {
        Launch launch = relay(line.split(" ")).only();

        assertThat(launch.entryPoint()).isEqualTo(entryPoint);
        String[] words = line.split(" ");
        int commandWords = words[0].equals("bench") ? 2 : 1;
        // Typed options: every value of the line is in them (the planner's fp8 is E4M3), and a
        // switch given (--json, --hosts, ...) is on in the component of its name, where the
        // options have one.
        Object given = launch.invocation().options();
        assertThat(given.getClass().isRecord()).isTrue();
        String options = given.toString().toLowerCase(Locale.ROOT);
        for (int i = commandWords; i < words.length; i++) {
            if (!words[i].startsWith("--")) {
                assertThat(options).contains(words[i].equals("fp8") ? "f8_e4m3" : words[i]);
            } else if (i + 1 == words.length || words[i + 1].startsWith("--")) {
                String component = camelCase(words[i].substring(2));
                for (RecordComponent c : given.getClass().getRecordComponents()) {
                    if (c.getName().equals(component)) {
                        assertThat(c.getAccessor().invoke(given)).as(words[i]).isEqualTo(true);
                    }
                }
            }
        }
    }

    /** {@code dp-attention} as a record component's name: {@code dpAttention}. */
    private static String camelCase(String flag) {
        StringBuilder name = new StringBuilder();
        for (String part : flag.split("-")) {
            name.append(
                    name.isEmpty()
                            ? part
                            : Character.toUpperCase(part.charAt(0)) + part.substring(1));
        }
        return name.toString();
    }

    /**
     * The code of the commands that read text flags of their own until issue 52 (a second parse,
     * each default written twice): where, relative to the checkout. It takes typed options now.
     */
    private static final Map<String, List<String>> FORMER_READERS =
            Map.ofEntries(
                    Map.entry(
                            "faults",
                            List.of("lab/src/main/java/io/weightrelay/lab/faults/FaultSuite.java")),
                    Map.entry(
                            "trainer",
                            List.of(
                                    "lab/src/main/java/io/weightrelay/lab/trainer/SimulatedTrainer.java")),
                    Map.entry(
                            "rollout",
                            List.of(
                                    "lab/src/main/java/io/weightrelay/lab/rollout/SimulatedRollout.java")));

    /** A command line of each command: every one takes typed options, its flags its fields. */
    private static final Map<String, String> TYPED =
            Map.ofEntries(
                    Map.entry("demo", "demo"),
                    Map.entry("bench planner", String.join(" ", with(PLANNER, "--tp=1"))),
                    Map.entry("bench dataplane", "bench dataplane"),
                    Map.entry("bench publish", "bench publish"),
                    Map.entry("bench update", "bench update"),
                    Map.entry("bench control-plane", "bench control-plane"),
                    Map.entry("bench checkpoint", "bench checkpoint"),
                    Map.entry("bench python", "bench python"),
                    Map.entry("faults", "faults"),
                    Map.entry("trainer", "trainer"),
                    Map.entry("rollout", "rollout --loaders http://a,http://b,http://c,http://d"));

    /** The ways a main reads a flag: Args, a switch, a flag() helper, a test for one. */
    private static final List<Pattern> READS =
            List.of(
                    Pattern.compile(
                            "\\b(?:args|a)\\.(?:get|getInt|getLong|has|all)\\(\"([a-z][a-z0-9-]*)\""),
                    Pattern.compile("case \"--([a-z][a-z0-9-]*)\""),
                    Pattern.compile("flag\\(argv, \"--([a-z][a-z0-9-]*)\""),
                    Pattern.compile("contains\\(\"--([a-z][a-z0-9-]*)\"\\)"));

    /**
     * Every command hands its code a record its flags made, defaults applied once, in the command;
     * a flag read again from text by the code behind it would be a second parse with defaults of
     * its own: this test names it (for instance after a merge that gave a main a new flag).
     */
    @Test
    void everyCommandHandsItsCodeTypedOptionsThatNoMainParsesAgain() throws Exception {
        List<String> runnable =
                commands().stream()
                        .map(p -> String.join(" ", p))
                        .filter(n -> !n.equals("bench") && !n.equals("help"))
                        .toList();
        assertThat(TYPED.keySet()).containsExactlyInAnyOrderElementsOf(runnable);
        assertThat(TYPED.keySet()).containsAll(FORMER_READERS.keySet());
        for (var entry : TYPED.entrySet()) {
            Object options = relay(entry.getValue().split(" ")).only().invocation().options();
            assertThat(options.getClass().isRecord())
                    .as("./relay %s hands its code a record", entry.getKey())
                    .isTrue();
        }
        for (var entry : FORMER_READERS.entrySet()) {
            Set<String> read = new TreeSet<>();
            for (String file : entry.getValue()) {
                String source = Files.readString(ServiceProcess.home().resolve(file));
                for (Pattern p : READS) {
                    Matcher m = p.matcher(source);
                    while (m.find()) {
                        read.add("--" + m.group(1));
                    }
                }
            }
            assertThat(read).as("flags ./relay %s's code parses again", entry.getKey()).isEmpty();
        }
    }

    @Test
    void progressLinesCarryBytesRateAndTimeLeft() {
        String half = Progress.line("publish", 512L << 20, 1L << 30, 2.0, false);
        assertThat(half).isEqualTo("  publish 512.0 MiB of 1.00 GiB (50%), 256.0 MiB/s, ETA 2.0 s");

        String bar = Progress.line("update x4", 1L << 29, 1L << 30, 1.0, true);
        assertThat(bar).contains("[############------------]").contains("ETA 1.0 s");

        assertThat(Progress.line("update", 0, 0, 0.1, true)).contains("0 B").doesNotContain("ETA");
        // A guess from the first bytes only is no estimate.
        assertThat(Progress.line("publish", 256, 1L << 30, 5.0, false)).doesNotContain("ETA");
        assertThat(Progress.finished("publish", 1L << 30, 0.5))
                .isEqualTo("  publish 1.00 GiB in 0.50 s, 2.00 GiB/s");
    }

    @Test
    void aTerminalGetsOneBarRedrawnInPlaceAndAPipeGetsPlainLines() throws Exception {
        ByteArrayOutputStream terminal = new ByteArrayOutputStream();
        Progress.show(new PrintStream(terminal, true, StandardCharsets.UTF_8), true);
        try (Progress p = Progress.of("publish", 1000)) {
            p.add(500);
            p.phase("applying");
            Thread.sleep(500);
            p.add(500);
        } finally {
            Progress.show(null, false);
        }
        String drawn = terminal.toString(StandardCharsets.UTF_8);
        assertThat(drawn)
                .startsWith("\r  publish (applying) [############------------]")
                .endsWith("\n");
        assertThat(drawn.split("\n")).as("one line, redrawn").hasSize(1);
        assertThat(drawn).contains("publish 1000 B in ");

        ByteArrayOutputStream pipe = new ByteArrayOutputStream();
        Progress.show(new PrintStream(pipe, true, StandardCharsets.UTF_8), false);
        try (Progress p = Progress.of("update x4", 0)) {
            p.set(300, 600);
        } finally {
            Progress.show(null, false);
        }
        assertThat(pipe.toString(StandardCharsets.UTF_8))
                .doesNotContain("\r")
                .matches("  update x4 300 B in \\d+\\.\\d\\d s, [\\d.]+ (B|KiB|MiB)/s\\n");
    }

    @Test
    void outsideRelayAProgressPrintsNothing() {
        // Progress.show is called by Relay.main only: a lab a test starts stays quiet.
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream before = System.err;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try (Progress p = Progress.of("publish", 100)) {
            p.add(50);
        } finally {
            System.setErr(before);
        }
        assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
    }
}
