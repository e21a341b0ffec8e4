package io.weightrelay.lab.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * Parses a {@code ./relay} command line and, when it is sound, hands the command's typed {@link
 * Invocation} to a {@link Launcher}; nothing runs on {@code --help} or on a usage error.
 */
public final class RelayCli {

    /** Exit code of a usage error: unknown flag, bad value, missing flag or command. */
    public static final int USAGE = 2;

    /**
     * Runs {@code invocation} once it has provided the Redis the command needs ({@code redis}: the
     * configured Redis when it answers, else one of the run's own).
     */
    @FunctionalInterface
    public interface Launcher {
        void launch(String command, Invocation<?> invocation, RedisNeed redis) throws Exception;
    }

    @Command(
            name = "relay",
            synopsisSubcommandLabel = "<command>",
            description = {
                "The weight-relay lab: real services on this machine, the fault suite and the"
                        + " benchmarks. Builds what it runs on first use.",
                "Run './relay <command> --help' (or './relay help <command>') for a command's"
                        + " flags."
            },
            subcommands = {
                DemoCommand.class,
                FaultsCommand.class,
                BenchCommand.class,
                TrainerCommand.class,
                RolloutCommand.class,
                RelayCli.Help.class
            },
            footerHeading = "%nOutput:%n",
            footer = {
                "Narration and progress go to stderr. On stdout a command prints JSON lines (with"
                        + " --json where a command also has a human form); the last line on stdout"
                        + " is the command's result."
            })
    static final class Relay extends RelayCommand {}

    @Command(
            name = "help",
            header = "Show a command's help: ./relay help bench update.",
            description = "Show a command's help: ./relay help bench update.",
            exitCodeList = {"0:help shown", "2:no such command"})
    static final class Help extends RelayCommand {

        @Parameters(paramLabel = "COMMAND", description = "A command, e.g. demo or bench update.")
        List<String> words = List.of();
    }

    private RelayCli() {}

    /** The command tree, for tests and for {@link #execute}. */
    public static CommandLine commandLine() {
        return new CommandLine(new Relay()).setUsageHelpWidth(100);
    }

    /**
     * Parses {@code args}; prints help (exit 0) or a usage error (exit {@link #USAGE}), or launches
     * the command and returns 0 once it returned.
     */
    public static int execute(String[] args, PrintStream out, PrintStream err, Launcher launcher)
            throws Exception {
        CommandLine cli = commandLine();
        PrintWriter outWriter = new PrintWriter(out, true, StandardCharsets.UTF_8);
        PrintWriter errWriter = new PrintWriter(err, true, StandardCharsets.UTF_8);
        cli.setOut(outWriter);
        cli.setErr(errWriter);
        if (helpAsked(args)) {
            // Help wins over whatever else is on the line (a bad value, a missing flag), as in git.
            CommandLine which = cli;
            for (String word : args) {
                CommandLine sub = which.getSubcommands().get(word);
                if (sub == null) {
                    if (!word.startsWith("-") && !which.getSubcommands().isEmpty()) {
                        return noSuchCommand(which, word, errWriter);
                    }
                    break;
                }
                which = sub;
            }
            which.usage(outWriter);
            return 0;
        }
        ParseResult parsed;
        try {
            parsed = cli.parseArgs(args);
        } catch (MissingParameterException e) {
            // An unknown flag says more than a missing one (it may be the missing one misspelt).
            List<String> unknown = e.getCommandLine().getUnmatchedArguments();
            return refuse(
                    unknown.isEmpty()
                            ? e
                            : new UnmatchedArgumentException(e.getCommandLine(), unknown),
                    errWriter);
        } catch (ParameterException e) {
            return refuse(e, errWriter);
        }
        ParseResult leaf = parsed;
        while (leaf.hasSubcommand()) {
            leaf = leaf.subcommand();
        }
        CommandLine chosen = leaf.commandSpec().commandLine();
        if (leaf.commandSpec().userObject() instanceof Help help) {
            return help(cli, help.words, outWriter, errWriter);
        }
        if (!(leaf.commandSpec().userObject() instanceof LabCommand command)) {
            // "./relay" or "./relay bench" alone: which command (or kind) is missing.
            errWriter.println(
                    chosen.getCommandName().equals("relay")
                            ? "relay: which command?"
                            : "relay " + chosen.getCommandName() + ": which kind?");
            chosen.usage(errWriter);
            return USAGE;
        }
        Invocation<?> invocation;
        try {
            command.check();
            invocation = command.invocation();
        } catch (ParameterException e) {
            return refuse(e, errWriter);
        } catch (IllegalArgumentException e) {
            return refuse(command.usage(e.getMessage()), errWriter);
        }
        launcher.launch(qualifiedName(chosen), invocation, command.redis());
        return 0;
    }

    private static boolean helpAsked(String[] args) {
        for (String arg : args) {
            if (arg.equals("--")) {
                return false;
            }
            if (arg.equals("--help") || arg.equals("-h")) {
                return true;
            }
        }
        return false;
    }

    /** {@code ./relay help <command...>}. */
    private static int help(CommandLine cli, List<String> words, PrintWriter out, PrintWriter err) {
        CommandLine which = cli;
        for (String word : words) {
            CommandLine sub = which.getSubcommands().get(word);
            if (sub == null) {
                return noSuchCommand(which, word, err);
            }
            which = sub;
        }
        which.usage(out);
        return 0;
    }

    private static int noSuchCommand(CommandLine parent, String word, PrintWriter err) {
        err.println(
                qualifiedName(parent)
                        + ": no command '"
                        + word
                        + "'; valid: "
                        + String.join(", ", parent.getSubcommands().keySet()));
        return USAGE;
    }

    private static int refuse(ParameterException e, PrintWriter err) {
        CommandLine where = e.getCommandLine();
        String name = qualifiedName(where);
        err.println(name + ": " + e.getMessage());
        if (!CommandLine.UnmatchedArgumentException.printSuggestions(e, err)) {
            err.print(where.getHelp().synopsis(0));
        }
        err.println("Run './" + name + " --help' for the flags and exit codes.");
        err.flush();
        return USAGE;
    }

    private static String qualifiedName(CommandLine command) {
        return command.getCommandSpec().qualifiedName(" ");
    }
}
