package io.weightrelay.lab.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * A {@code ./relay} command that runs: its flags are declared here so picocli can refuse what the
 * command does not take, and what it does take is handed to {@link #entryPoint()}'s {@code main}.
 */
abstract class LabCommand extends RelayCommand {

    static final String MODEL =
            "Catalogued model: ${COMPLETION-CANDIDATES}; default ${DEFAULT-VALUE}.";

    /**
     * How the {@code main} reads a flag's value: {@code --name=value} (trainer-client's {@code
     * Args} and the planner's {@code BenchArgs} do) or {@code --name value} only. Joined, a value
     * that starts with {@code --} (a JVM or Spring flag) reaches the command intact.
     */
    enum ValueStyle {
        SPACED,
        JOINED
    }

    @Spec CommandSpec spec;

    private final String entryPoint;
    private final ValueStyle valueStyle;

    LabCommand(String entryPoint, ValueStyle valueStyle) {
        this.entryPoint = entryPoint;
        this.valueStyle = valueStyle;
    }

    /** The class whose {@code main} runs the command. */
    String entryPoint() {
        return entryPoint;
    }

    /** Whether the {@code main} reads {@code --name=value} ({@link ValueStyle#JOINED}). */
    final boolean joinedValues() {
        return valueStyle == ValueStyle.JOINED;
    }

    /** What Redis the command needs; the launcher provides it before {@code main} runs. */
    RedisNeed redis() {
        return RedisNeed.NONE;
    }

    /** Refuses combinations of flags the command does not take (before anything starts). */
    void check() {}

    final ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    final boolean given(String flag) {
        return spec.commandLine().getParseResult().hasMatchedOption(flag);
    }

    /**
     * Refuses {@code --engine mooncake} with {@code --hosts}: {@code what} (the command's
     * multi-host run) has no Mooncake yet.
     */
    final void refuseMooncakeWithHosts(Flags.Engine engine, boolean hosts, String what) {
        if (hosts && engine.mooncake()) {
            throw usage(
                    "--engine mooncake does not run with --hosts yet: "
                            + what
                            + " runs on the built-in engine only");
        }
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
