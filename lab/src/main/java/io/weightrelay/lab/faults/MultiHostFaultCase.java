package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.MultiHostCluster;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.reshard.placement.Mode;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
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

    /** A failed result saying why the multi-host lab cannot run here, or empty when it can. */
    default Optional<FaultResult> unrunnable(long started) {
        try {
            HostLab.requireRoot();
            return Optional.empty();
        } catch (RuntimeException e) {
            return Optional.of(
                    new FaultResult(
                            name(),
                            false,
                            "the multi-host lab cannot run here: " + e.getMessage(),
                            0,
                            0,
                            0,
                            (System.nanoTime() - started) / 1e9,
                            true,
                            false));
        }
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
    static CompletableFuture<MultiHostCluster.Update> updateAsync(MultiHostCluster lab) {
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
     * With the network whole again: the engines rebuild on the active generation, then the next
     * publish reaches everyone, every byte checked on its host. Returns that generation.
     */
    static long rebuildThenPublishNext(SharedLab.BorrowedHosts borrowed) throws Exception {
        MultiHostCluster lab = borrowed.lab;
        lab.registerAll("lab");
        lab.updateAll().requireVerified();
        long next = lab.publish(borrowed.nextStep()).generation();
        lab.updateAll().requireVerified();
        return next;
    }

    /** The case's result: passed when nothing went wrong and nothing partial or corrupt served. */
    default FaultResult result(
            long started,
            String detail,
            List<String> problems,
            long corrupted,
            long partial,
            boolean provedMidUpdate) {
        boolean passed = problems.isEmpty() && corrupted == 0 && partial == 0;
        return new FaultResult(
                name(),
                passed,
                problems.isEmpty() ? detail : detail + "; " + String.join("; ", problems),
                corrupted,
                partial,
                0,
                (System.nanoTime() - started) / 1e9,
                true,
                provedMidUpdate);
    }
}
