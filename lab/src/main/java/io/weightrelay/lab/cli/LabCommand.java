package io.weightrelay.lab.cli;

import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * A {@code ./relay} command that runs: its flags are declared here so picocli can refuse what the
 * command does not take, and what it does take is handed to {@link #entryPoint()}'s {@code main}.
 */
abstract class LabCommand {

    // Exit codes: the same meaning in every command, listed in each command's help.
    static final String EXIT_HEADING = "%nExit codes:%n";
    static final String EXIT_OK = "0:done; every check passed";
    static final String EXIT_CHECK = "1:a check failed or a step broke (the output says which)";
    static final String EXIT_USAGE =
            "2:usage error: an unknown flag, a bad value or a missing one (nothing was started)";
    static final String EXIT_CANNOT = "3:cannot run here: needs root, or not part of this build";

    static final String MODEL =
            "Catalogued model: ${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}.";

    @Spec CommandSpec spec;

    @Mixin Flags.Help help;

    /** The class whose {@code main} runs the command. */
    abstract String entryPoint();

    /**
     * Whether the {@code main} reads {@code --name=value} (trainer-client's {@code Args} and the
     * planner's {@code BenchArgs} do; the others read {@code --name value} only). Joined, a value
     * that starts with {@code --} (a JVM or Spring flag) reaches the command intact.
     */
    boolean joinedValues() {
        return false;
    }

    /** Refuses combinations of flags the command does not take (before anything starts). */
    void check() {}

    final ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    final boolean given(String flag) {
        return spec.commandLine().getParseResult().hasMatchedOption(flag);
    }

    /** Refuses {@code flags} unless {@code condition}, naming {@code needs}. */
    final void onlyWith(boolean condition, String needs, String... flags) {
        if (condition) {
            return;
        }
        for (String flag : flags) {
            if (given(flag)) {
                throw usage(flag + " needs " + needs);
            }
        }
    }
}
