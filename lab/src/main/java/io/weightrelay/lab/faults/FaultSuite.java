package io.weightrelay.lab.faults;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.springframework.util.FileSystemUtils;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./relay faults [--json] [--model M] [--hosts] [--only name,...]}: runs every fault case on
 * the real lab, one row per case, then one JSON line: {@code {"cases": N, "passed": N,
 * "corrupted_served": 0, "partial_served": 0, "lost_committed": 0, "mid_update_claimed": N,
 * "mid_update_asserted": N, ...}}. A case that claims to inject its fault while an update runs
 * counts as asserted only when it proved that the fault landed before the update ended. Exits 0
 * only if every case passed. {@code FaultSuiteTest} runs the same {@link #cases()} in {@code mvn
 * verify}.
 */
public final class FaultSuite {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private FaultSuite() {}

    /** Every case of the suite, in the order it runs them: the one list to add a case to. */
    public static List<FaultCase> cases() {
        return List.of(
                LabCase.reloadingActive(
                        "loader-restarted-loads-active", LoaderScaleOutCase::inject),
                LabCase.reloadingActive("byte-flipped-after-commit", CorruptedObjectCase::inject),
                LabCase.midApply(
                        "lying-reader", LyingReaderCase::inject, SharedLab.Shape.COMPAT_PAIR),
                LabCase.midApply(
                        "loader-killed-mid-apply",
                        LoaderKilledMidApplyCase::inject,
                        SharedLab.Shape.COMPAT_PAIR),
                LabCase.destroyingActive(
                        "segment-owner-killed-after-commit", SegmentOwnerKilledCase::inject),
                LabCase.destroyingActive(
                        "publisher-killed-mid-publish", PublisherKilledMidPublishCase::inject),
                new RedisRestartCase(),
                new RedisDataLostCase(),
                LabCase.destroyingActiveMidApply(
                        "segment-owner-killed-mid-apply", SegmentOwnerKilledMidApplyCase::inject),
                LabCase.midApply(
                        "loader-dead-for-good-mid-apply",
                        LoaderDeadForGoodMidApplyCase::inject,
                        SharedLab.Shape.COMPAT_PAIR),
                LabCase.reloadingActive("flaky-reader", FlakyReaderCase::inject),
                LabCase.reloadingActive("byte-flipped-in-flight", ByteFlippedInFlightCase::inject),
                LabCase.reloadingActive("checkpoint-disk-full", CheckpointDiskFullCase::inject),
                // after every case of the compat pair that needs older generations kept
                LabCase.reloadingActive("loader-died-for-good", LoaderDiedForGoodCase::inject),
                // last on the compat pair: its first control-api stays dead, so it discards the
                // lab (every case above shares that one lab, started once)
                new ControlApiKilledCase(),
                // its lab has one control-api: after the case above, which discards its lab
                new ControlApiRestartedCase(),
                // its own lab
                new ControlApiClockSkewCase(),
                // the multi-host lab, one per case (each stops the local lab first)
                new DataLinkCutCase(),
                new LoadersPartitionedCase(),
                // last: its lab replaces the ones above
                LabCase.midApply(
                        "relay-delegate-killed-mid-apply",
                        LoaderKilledMidApplyCase::injectIntoRelayDelegate,
                        SharedLab.Shape.DIRECT_RELAYS),
                // the same on the parameter-direct lab: pushes and relayed copies
                LabCase.reloadingActive(
                        "byte-flipped-in-flight-direct",
                        ByteFlippedInFlightCase::inject,
                        SharedLab.Shape.DIRECT_RELAYS));
    }

    /** Whether {@code c} needs the multi-host lab ({@code --hosts}, root). */
    public static boolean needsHosts(FaultCase c) {
        return c instanceof MultiHostFaultCase;
    }

    /** Runs {@code cases} one after another; the shared lab is stopped at the end. */
    public static List<FaultResult> run(
            FaultContext context,
            List<FaultCase> cases,
            java.util.function.Consumer<FaultResult> each) {
        List<FaultResult> results = new ArrayList<>();
        try {
            for (FaultCase c : cases) {
                FaultResult r;
                long started = System.nanoTime();
                try {
                    r = c.run(context);
                } catch (Exception | AssertionError e) {
                    r =
                            FaultResult.failed(
                                    c.name(),
                                    e.getClass().getSimpleName() + ": " + e.getMessage(),
                                    started,
                                    c.claimsMidUpdate());
                    SharedLab.discard(context);
                }
                results.add(r);
                each.accept(r);
            }
        } finally {
            SharedLab.discard(context);
        }
        return results;
    }

    /** Picks the named cases ({@code --only}); an unknown name is an error naming it. */
    public static List<FaultCase> only(List<FaultCase> all, Set<String> names) {
        List<FaultCase> out = new ArrayList<>();
        Set<String> known = new LinkedHashSet<>();
        for (FaultCase c : all) {
            known.add(c.name());
            if (names.contains(c.name())) {
                out.add(c);
            }
        }
        for (String n : names) {
            if (!known.contains(n)) {
                throw new IllegalArgumentException(
                        "no fault case '" + n + "'; the cases are " + String.join(", ", known));
            }
        }
        return out;
    }

    /** The last line: totals over {@code results}. */
    public static String summary(String model, List<FaultResult> results, double seconds) {
        long passed = results.stream().filter(FaultResult::passed).count();
        List<String> failed =
                results.stream().filter(r -> !r.passed()).map(r -> quote(r.name())).toList();
        return String.format(
                Locale.ROOT,
                "{\"cases\": %d, \"passed\": %d, \"corrupted_served\": %d, \"partial_served\": %d,"
                        + " \"lost_committed\": %d, \"mid_update_claimed\": %d,"
                        + " \"mid_update_asserted\": %d, \"failed\": [%s], \"model\": %s,"
                        + " \"seconds\": %.1f}",
                results.size(),
                passed,
                results.stream().mapToLong(FaultResult::corruptedServed).sum(),
                results.stream().mapToLong(FaultResult::partialServed).sum(),
                results.stream().mapToLong(FaultResult::lostCommitted).sum(),
                results.stream().filter(FaultResult::claimsMidUpdate).count(),
                results.stream().filter(FaultResult::provedMidUpdate).count(),
                String.join(", ", failed),
                quote(model),
                seconds);
    }

    static String json(FaultResult r) {
        return String.format(
                Locale.ROOT,
                "{\"case\": %s, \"passed\": %s, \"corrupted_served\": %d, \"partial_served\": %d,"
                        + " \"lost_committed\": %d, \"mid_update\": %s, \"seconds\": %.1f,"
                        + " \"detail\": %s}",
                quote(r.name()),
                r.passed(),
                r.corruptedServed(),
                r.partialServed(),
                r.lostCommitted(),
                !r.claimsMidUpdate() ? "null" : Boolean.toString(r.provedMidUpdate()),
                r.seconds(),
                quote(firstLine(r.detail())));
    }

    static String row(FaultResult r) {
        return String.format(
                Locale.ROOT,
                "%-4s %-36s %6.1f s  %s",
                r.passed() ? "PASS" : "FAIL",
                r.name(),
                r.seconds(),
                firstLine(r.detail()));
    }

    /** A detail's first line: a service's log tail in an error goes to stderr, not the row. */
    static String firstLine(String detail) {
        String d = String.valueOf(detail).strip();
        int nl = d.indexOf('\n');
        return nl < 0 ? d : d.substring(0, nl).strip() + " ...";
    }

    /** {@code s} as a JSON string literal (a null as the text {@code null}, quoted). */
    static String quote(String s) {
        return JSON.writeValueAsString(String.valueOf(s));
    }

    /**
     * What {@code ./relay faults}'s flags say, defaults applied there.
     *
     * @param only the cases to run, by name; empty for every case
     * @param hosts whether the multi-host cases run too (root only)
     * @param json one JSON line per case instead of a table row
     */
    public record Options(String model, List<String> only, boolean hosts, boolean json) {}

    public static void run(Options options) throws Exception {
        String model = options.model();
        List<FaultCase> cases = cases();
        if (!options.only().isEmpty()) {
            cases = only(cases, new LinkedHashSet<>(options.only()));
        }
        if (!options.hosts()) {
            List<FaultCase> local = new ArrayList<>();
            for (FaultCase c : cases) {
                if (needsHosts(c)) {
                    System.err.println(
                            "faults: "
                                    + c.name()
                                    + " needs the multi-host lab; not run (run with --hosts, as"
                                    + " root)");
                } else {
                    local.add(c);
                }
            }
            cases = local;
        }
        Path work = Files.createTempDirectory("wr-faults-");
        long started = System.nanoTime();
        List<FaultResult> results;
        try {
            results =
                    run(
                            new FaultContext(model, options.hosts(), work),
                            cases,
                            r -> System.out.println(options.json() ? json(r) : row(r)));
        } finally {
            FileSystemUtils.deleteRecursively(work);
        }
        System.out.println(summary(model, results, (System.nanoTime() - started) / 1e9));
        System.exit(results.stream().allMatch(FaultResult::passed) ? 0 : 1);
    }
}
