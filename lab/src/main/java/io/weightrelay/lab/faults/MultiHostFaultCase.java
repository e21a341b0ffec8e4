package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.cluster.MultiHostCluster;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.reshard.placement.Mode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import tools.jackson.databind.JsonNode;

/**
 * A case that needs the multi-host lab (root, network namespaces): {@code ./relay faults} runs it
 * with {@code --hosts} and says so when it does not; {@code FaultSuiteTest} always runs it, and it
 * fails with the reason where the multi-host lab cannot start. The steps every such case shares
 * (the lab it starts, the update it runs while it breaks a link, what the engines serve afterwards,
 * the rebuild and the next publish) are here once.
 */
interface MultiHostFaultCase extends FaultCase {

    /** The configured transfer timeout of every service in these cases' labs. */
    Duration IO_TIMEOUT = Duration.ofSeconds(5);

    /** The sessions' phase timeout: the outer bound, well above the transfer timeout. */
    Duration PHASE_TIMEOUT = Duration.ofSeconds(60);

    /**
     * Breaks a link of the shared multi-host lab and proves what the system did, recording into
     * {@code found}; returns the case's detail. The lab's logs are dumped when it throws.
     */
    String inject(SharedLab.BorrowedHosts borrowed, Ledger found) throws Exception;

    /**
     * Runs {@link #inject} on the shared multi-host lab, or fails saying why that lab cannot run
     * here; a case that did not pass leaves a state nobody proved usable, so the lab is discarded
     * and the next multi-host case starts a fresh one.
     */
    @Override
    default FaultResult run(FaultContext context) {
        long started = System.nanoTime();
        try {
            HostLab.requireRoot();
        } catch (RuntimeException e) {
            return FaultResult.failed(
                    name(), "the multi-host lab cannot run here: " + e.getMessage(), started, true);
        }
        Ledger found = new Ledger();
        String detail;
        try {
            SharedLab.BorrowedHosts borrowed = borrowLab(context);
            try {
                detail = inject(borrowed, found);
            } catch (Exception | AssertionError e) {
                borrowed.lab.dumpLogs();
                throw e;
            }
        } catch (Exception | AssertionError e) {
            found.threw(e);
            detail = "failed";
        }
        if (!found.clean()) {
            SharedLab.discard(context);
        }
        return found.result(name(), detail, started, true);
    }

    @Override
    default boolean claimsMidUpdate() {
        return true;
    }

    /**
     * The multi-host lab these cases share, started on first use: two rollout hosts, one
     * compatibility-mode instance each, every service with {@link #IO_TIMEOUT}; the local cases'
     * lab is stopped first (one lab at a time on a small machine). A case that fails discards it
     * ({@link SharedLab#discard}), so the next one starts a fresh one.
     */
    static SharedLab.BorrowedHosts borrowLab(FaultContext context) throws Exception {
        return SharedLab.borrowHosts(
                context,
                () ->
                        MultiHostCluster.start(
                                LabCluster.Spec.of(context.model(), 2, 1, Mode.COMPAT),
                                System.getProperty("relay.lab.prefix", "wr-faults"),
                                List.of(
                                        "--relay.dataplane.io-timeout="
                                                + IO_TIMEOUT.toSeconds()
                                                + "s")));
    }

    /** Every engine's update within {@link #PHASE_TIMEOUT}, started on another thread. */
    static CompletableFuture<LabUpdate> updateAsync(MultiHostCluster lab) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return lab.updateWithin(PHASE_TIMEOUT);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
    }

    /**
     * A problem when the update ended later than the transfer timeout after the session's deadline:
     * a read or push that hears nothing fails within the former, the latter is the outer bound.
     */
    static void requireEndedInTime(double waitedSeconds, List<String> problems) {
        double bound = PHASE_TIMEOUT.toSeconds() + IO_TIMEOUT.toSeconds() + 10;
        if (waitedSeconds > bound) {
            problems.add(
                    String.format(
                            Locale.ROOT,
                            "the update ended %.1f s after the cut, past %.0f s",
                            waitedSeconds,
                            bound));
        }
    }

    /**
     * Counts the engines that advanced to {@code brokenGeneration} although an update failed, or
     * serve bytes not all of their generation, adding a problem for each.
     */
    static long partialServed(
            MultiHostCluster lab, boolean anyFailed, long brokenGeneration, List<String> problems)
            throws Exception {
        long partial = 0;
        for (JsonNode s : lab.serving()) {
            if (anyFailed
                    && s.has("generation")
                    && s.path("generation").asLong() == brokenGeneration) {
                partial++;
                problems.add(s.path("instance").asString() + " advanced to " + brokenGeneration);
            }
            if (s.has("verified") && !s.path("verified").asBoolean()) {
                partial++;
                problems.add(
                        s.path("instance").asString()
                                + " serves bytes not all of its generation: "
                                + s.path("error").asString());
            }
        }
        return partial;
    }

    /**
     * The engines of {@code ended} whose update failed, as {@code instance: error}. One that failed
     * without a reason is a problem; one that ended UPDATED with bytes not all of {@code
     * generation} is a corrupted one served.
     */
    static List<String> failures(LabUpdate ended, long generation, Ledger found) {
        List<String> failures = new ArrayList<>();
        for (LabUpdate.Engine e : ended.engines()) {
            String instance = e.instance();
            if (e.updated()) {
                if (!e.ok()) {
                    found.corrupted++;
                    found.problems.add(
                            instance
                                    + " ended UPDATED with bytes not all of "
                                    + generation
                                    + ": "
                                    + Objects.toString(e.problem(), ""));
                }
                continue;
            }
            String error = Objects.toString(e.problem(), "");
            failures.add(instance + ": " + error);
            if (error.isBlank() || "null".equals(error)) {
                found.problems.add(instance + " failed without a reason");
            }
        }
        return failures;
    }

    /**
     * With the network whole again: the engines rebuild on the active generation, then the next
     * publish reaches everyone, every byte checked on its host. Returns that generation.
     */
    static long rebuildThenPublishNext(SharedLab.BorrowedHosts borrowed) throws Exception {
        MultiHostCluster lab = borrowed.lab;
        lab.registerAll("lab");
        lab.updateAll().requireUpdated();
        long next = lab.publishGeneration(borrowed.nextStep()).generation();
        lab.updateAll().requireUpdated();
        return next;
    }
}
