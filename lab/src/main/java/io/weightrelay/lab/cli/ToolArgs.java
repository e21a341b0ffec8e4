package io.weightrelay.lab.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * The command line of a tool that keeps its own {@code main} ({@code trainer}, {@code rollout},
 * {@code faults}: their code reads text flags), written from a command's parsed flags, every value
 * given or defaulted, so the tool's own defaults never apply.
 */
final class ToolArgs {

    private final List<String> args = new ArrayList<>();

    /** {@code --name=value}; nothing when {@code value} is null (not given, no default). */
    ToolArgs joined(String name, Object value) {
        if (value != null) {
            args.add(name + "=" + value);
        }
        return this;
    }

    /** {@code --name value}; nothing when {@code value} is null. */
    ToolArgs spaced(String name, Object value) {
        if (value != null) {
            args.add(name);
            args.add(String.valueOf(value));
        }
        return this;
    }

    /** {@code --name} when {@code on}. */
    ToolArgs flag(String name, boolean on) {
        if (on) {
            args.add(name);
        }
        return this;
    }

    List<String> list() {
        return List.copyOf(args);
    }
}
