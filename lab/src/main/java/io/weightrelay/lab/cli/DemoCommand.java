package io.weightrelay.lab.cli;

import io.weightrelay.lab.demo.Demo;
import io.weightrelay.reshard.placement.Mode;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "demo",
        header = "The lab demo: publish, update, verify and restart on real services.",
        description = {
            "The whole story on this machine: starts control-api, two publishers and a loader per"
                    + " rollout instance as real services on loopback, with the instances in both"
                    + " modes at once (even ones compatibility, odd ones parameter-direct) unless"
                    + " --mode says one; publishes three generations, updates every instance to"
                    + " each and checks every byte; kills one loader per mode and brings each back"
                    + " on the active generation without a republish. Ctrl-C stops everything it"
                    + " started.",
            "Narration and progress go to stderr; stdout carries a report table, or with --json"
                    + " one JSON line per generation and a summary line last (verified,"
                    + " min_store_read_ratio, max_store_read_ratio, publish_tcp_bytes, the publish"
                    + " and update seconds per generation and mode; with --engine mooncake also"
                    + " local_replica_ratio).",
            "--engine mooncake runs every service on the real Mooncake Store and Transfer Engine"
                    + " (relay.dataplane.engine=mooncake) against a mooncake_master of the pinned"
                    + " wheel in /opt/weight-relay/venv (WEIGHT_RELAY_VENV moves it), started in a"
                    + " network namespace of its own (root only) and removed at the end. The whole"
                    + " story runs on it, the loader restart included. After each publish it asks the"
                    + " master where every object's replica lives and reports the share in its own"
                    + " publisher's segment (local_replica_ratio; publishers prefer their own"
                    + " segment and fall back to another only when it is full).",
            "With --hosts the same story runs with every service group on a host of its own"
                    + " (network namespaces, a private /dev/shm each; root only), one lab per"
                    + " mode, and a summary JSON line ends stdout. With --engine mooncake the"
                    + " services talk Mooncake's tcp transport between the hosts: the master runs on"
                    + " the Redis host, every agent binds its own host's data-plane address."
        })
final class DemoCommand extends LabCommand {

    @Mixin final Flags.Model model = new Flags.Model("qwen2.5-0.5b");

    @Mixin final Flags.Rollout rollout = new Flags.Rollout(4, 2);

    @Option(
            names = "--mode",
            paramLabel = "MODE",
            defaultValue = "both",
            converter = Values.DemoMode.class,
            completionCandidates = Values.DemoMode.class,
            description = "${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}.")
    String mode;

    @Mixin Flags.Engine engine;

    @Option(names = "--hosts", description = "Run on several hosts of this machine (root only).")
    boolean hosts;

    @Option(
            names = "--json",
            description =
                    "For scripts: stdout carries JSON lines only (one per generation, or with"
                            + " --hosts one per mode, then the summary); narration, progress and"
                            + " the table stay on stderr.")
    boolean json;

    @Mixin Flags.HostsPrefix prefix;

    @Override
    Invocation<Demo.Options> invocation() {
        Demo.Options options =
                new Demo.Options(
                        model.model,
                        rollout.instances,
                        rollout.tp,
                        mode.equals("both")
                                ? List.of(Mode.COMPAT, Mode.DIRECT)
                                : List.of(Mode.parse(mode)),
                        engine.dataplane(),
                        json,
                        hosts,
                        prefix.prefix);
        return new Invocation<>(Demo.class, options, Demo::run);
    }

    @Override
    RedisNeed redis() {
        // --hosts: the Redis host runs a redis-server of its own; else the lab's Redis or the
        // run's.
        return hosts ? RedisNeed.SERVER : RedisNeed.answering(null, null);
    }

    @Override
    void check() {
        onlyWith(hosts, "--hosts", "--prefix");
        if (!hosts && mode.equals("both") && rollout.instances < 2) {
            // one lab serves both modes: an instance of each
            throw usage(
                    "--mode both needs at least 2 instances (one per mode), got "
                            + rollout.instances);
        }
    }
}
