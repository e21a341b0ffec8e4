package io.weightrelay.lab.cli;

import io.weightrelay.lab.faults.FaultCase;
import io.weightrelay.lab.faults.FaultSuite;
import java.util.Iterator;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "faults",
        header = "The fault suite: real faults injected into a running lab, outcomes proven.",
        description = {
            "The fault suite: each case injects one real fault (a process killed by signal, a byte"
                    + " flipped in a segment, a data link cut) into a running lab and proves what"
                    + " the system did. One row per case, then one JSON line of totals, last on"
                    + " stdout.",
            "Cases that need the multi-host lab run only with --hosts (root) and are named on"
                    + " stderr otherwise."
        },
        exitCodeList = {
            "0:every case passed",
            "1:a case failed (the row and the totals name it)",
            RelayCommand.EXIT_USAGE
        })
final class FaultsCommand extends LabCommand {

    /** The cases' names, for the help and for {@code --only}. */
    static final class Names implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return FaultSuite.cases().stream().map(FaultCase::name).iterator();
        }
    }

    @Mixin final Flags.Model model = new Flags.Model("tiny");

    @Option(
            names = "--only",
            paramLabel = "name,...",
            completionCandidates = Names.class,
            description = "Run only these cases: ${COMPLETION-CANDIDATES}.")
    String only;

    @Option(names = "--hosts", description = "Also run the multi-host cases (root only).")
    boolean hosts;

    @Option(names = "--json", description = "One JSON line per case instead of a table row.")
    boolean json;

    @Override
    Invocation<FaultSuite.Options> invocation() {
        return new Invocation<>(
                FaultSuite.class,
                new FaultSuite.Options(model.model, onlyNames(), hosts, json),
                FaultSuite::run);
    }

    /** The cases {@code --only} names; empty when it is not given (every case runs). */
    private List<String> onlyNames() {
        return only != null ? List.of(only.split(",")) : List.of();
    }

    @Override
    RedisNeed redis() {
        // Every case's lab runs a redis-server of its own, which the Redis cases kill.
        return RedisNeed.SERVER;
    }

    @Override
    void check() {
        List<String> known = FaultSuite.cases().stream().map(FaultCase::name).toList();
        for (String name : onlyNames()) {
            if (!known.contains(name)) {
                throw usage(
                        "--only: no fault case '" + name + "'; valid: " + String.join(", ", known));
            }
        }
    }
}
