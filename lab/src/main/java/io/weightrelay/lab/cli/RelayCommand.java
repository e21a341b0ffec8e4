package io.weightrelay.lab.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * What the help of every {@code ./relay} command and group has in common, inherited from here:
 * {@code -h}/{@code --help}, the flags in the order the command declares them, and the exit codes
 * (their heading, and the list most commands give; a command whose exits mean more lists its own).
 */
@Command(
        sortOptions = false,
        exitCodeListHeading = RelayCommand.EXIT_HEADING,
        exitCodeList = {
            RelayCommand.EXIT_OK,
            RelayCommand.EXIT_CHECK,
            RelayCommand.EXIT_USAGE,
            RelayCommand.EXIT_CANNOT
        })
abstract class RelayCommand {

    // Exit codes: the same meaning in every command, listed in each command's help.
    static final String EXIT_HEADING = "%nExit codes:%n";
    static final String EXIT_OK = "0:done; every check passed";
    static final String EXIT_CHECK = "1:a check failed or a step broke (the output says which)";
    static final String EXIT_USAGE =
            "2:usage error: an unknown flag, a bad value or a missing one (nothing was started)";
    static final String EXIT_CANNOT =
            "3:cannot run here: needs root, or redis-server to start a Redis of its own";

    @Mixin Flags.Help help;
}
