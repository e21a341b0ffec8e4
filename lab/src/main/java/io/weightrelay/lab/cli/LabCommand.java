package io.weightrelay.lab.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * A {@code ./relay} command that runs: its flags are declared here, with their defaults, so picocli
 * refuses what the command does not take; what it does take becomes the options of the code that
 * runs it ({@link #invocation()}), typed, parsed once.
 */
abstract class LabCommand extends RelayCommand {

    @Spec CommandSpec spec;

    /**
     * The options this command's flags make and the code that runs them. Throws {@code
     * IllegalArgumentException} for a combination the options refuse: a usage error, nothing ran.
     */
    abstract Invocation<?> invocation();

    /** What Redis the command needs; the launcher provides it before the command runs. */
    RedisNeed redis() {
        return RedisNeed.NONE;
    }

    /** Refuses combinations of flags the command does not take (before anything starts). */
    void check() {}

    final ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
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
            if (spec.commandLine().getParseResult().hasMatchedOption(flag)) {
                throw usage(flag + " needs " + needs);
            }
        }
    }
}
