package io.weightrelay.lab;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code ./relay} launcher. Each command is the {@code main} of the module that owns it, so a
 * benchmark lives beside the code it measures and the lab only routes to it.
 */
public final class Relay {

    private record Command(String entryPoint, String usage) {}

    private static final Map<String, Command> COMMANDS = new LinkedHashMap<>();

    static {
        COMMANDS.put(
                "demo",
                new Command(
                        "io.weightrelay.lab.demo.Demo",
                        "demo [--hosts [--json]] [--model M] [--instances I] [--tp P]"
                                + " [--mode compat|direct|both]"));
        COMMANDS.put(
                "trainer",
                new Command(
                        "io.weightrelay.trainer.sim.SimulatedTrainer",
                        "trainer --model M --trainer-nodes T [...]"));
        COMMANDS.put(
                "rollout",
                new Command(
                        "io.weightrelay.lab.rollout.SimulatedRollout",
                        "rollout --model M --instances I --tp P --mode compat|direct [...]"));
        COMMANDS.put(
                "bench planner",
                new Command(
                        "io.weightrelay.reshard.bench.PlannerBench",
                        "bench planner --model M --trainer-nodes T --rollout-nodes R --instances I"
                                + " --tp P [--ep E] --mode compat|direct --nic-gbps G"
                                + " [--nics-per-node N]"));
        COMMANDS.put(
                "bench dataplane",
                new Command(
                        "io.weightrelay.dataplane.bench.DataplaneBench",
                        "bench dataplane [--size BYTES]"));
        COMMANDS.put(
                "bench dataplane --hosts",
                new Command(
                        "io.weightrelay.lab.bench.HostsDataplaneBench",
                        "bench dataplane --hosts [--size BYTES] [--repeats N] [--streams S]"));
        COMMANDS.put(
                "bench publish",
                new Command(
                        "io.weightrelay.lab.bench.PublishBench",
                        "bench publish --model M --trainer-nodes T"));
        COMMANDS.put(
                "bench update",
                new Command(
                        "io.weightrelay.lab.bench.UpdateBench",
                        "bench update --model M --instances I --tp P --mode compat|direct"
                                + " [--no-checksums]"));
        COMMANDS.put(
                "bench control-plane",
                new Command(
                        "io.weightrelay.lab.bench.ControlPlaneBench",
                        "bench control-plane --model M [--tensors N] --trainer-nodes T"
                                + " --instances I --tp P --mode direct|compat"));
        COMMANDS.put(
                "bench python",
                new Command(
                        "io.weightrelay.lab.bench.PythonBench",
                        "bench python --model M [--instances I --tp P --mode compat|direct]"));
    }

    private Relay() {}

    public static void main(String[] args) throws Throwable {
        if (args.length == 0 || args[0].equals("help") || args[0].equals("--help")) {
            usage();
            System.exit(args.length == 0 ? 2 : 0);
        }
        int words = args[0].equals("bench") && args.length > 1 ? 2 : 1;
        String name = String.join(" ", Arrays.copyOf(args, words));
        // The multi-host variant of a benchmark is a command of the lab's own.
        if (Arrays.asList(args).contains("--hosts") && COMMANDS.containsKey(name + " --hosts")) {
            name = name + " --hosts";
        }
        Command command = COMMANDS.get(name);
        if (command == null) {
            System.err.println("relay: unknown command '" + name + "'");
            usage();
            System.exit(2);
        }
        run(command, Arrays.copyOfRange(args, words, args.length));
    }

    private static void run(Command command, String[] rest) throws Throwable {
        Method main;
        try {
            main = Class.forName(command.entryPoint()).getMethod("main", String[].class);
        } catch (ClassNotFoundException ex) {
            System.err.println(
                    "relay: '"
                            + command.usage()
                            + "' is not part of this build yet ("
                            + command.entryPoint()
                            + " is missing)");
            System.exit(3);
            return;
        }
        try {
            main.invoke(null, (Object) rest);
        } catch (InvocationTargetException ex) {
            throw ex.getCause();
        }
    }

    private static void usage() {
        System.err.println("usage: ./relay <command> [flags]");
        COMMANDS.values().forEach(c -> System.err.println("  ./relay " + c.usage()));
    }
}
