package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.MultiHostCluster;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.reshard.placement.Mode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;

/**
 * Case 9, on the multi-host lab: one trainer host's data-plane link is cut (its bridge port down:
 * frames dropped silently, as a pulled cable) while the rollout hosts read from it. Every read of
 * it times out after the configured {@code relay.dataplane.io-timeout}, every engine's update ends
 * failed naming the failure, none advances or serves bytes not all of its generation, and nothing
 * waits much longer than that timeout. With the link back, the engines rebuild on the active
 * generation and the next publish reaches everyone, every byte checked on its host.
 */
final class DataLinkCutCase implements MultiHostFaultCase {

    /** The configured transfer timeout of every service in this case's lab. */
    static final Duration IO_TIMEOUT = Duration.ofSeconds(5);

    /** The sessions' phase timeout: the outer bound, well above the transfer timeout. */
    static final Duration PHASE_TIMEOUT = Duration.ofSeconds(60);

    private static final String CUT = "trainer-0001";

    /** How long after the update starts the link is cut: prepare is done, the reads are on. */
    private static final Duration CUT_AFTER = Duration.ofSeconds(3);

    @Override
    public String name() {
        return "data-link-cut-mid-apply";
    }

    @Override
    public boolean claimsMidUpdate() {
        return true;
    }

    @Override
    public FaultResult run(FaultContext context) {
        long started = System.nanoTime();
        long corrupted = 0;
        long partial = 0;
        boolean landedMidUpdate = false;
        List<String> problems = new ArrayList<>();
        String detail;
        try {
            HostLab.requireRoot();
        } catch (RuntimeException e) {
            return new FaultResult(
                    name(),
                    false,
                    "the multi-host lab cannot run here: " + e.getMessage(),
                    0,
                    0,
                    0,
                    (System.nanoTime() - started) / 1e9,
                    true,
                    false);
        }
        // one lab at a time on a small machine: the local cases' lab is stopped first
        SharedLab.discard(context);
        String prefix = System.getProperty("relay.lab.prefix", "wr-faults");
        try (MultiHostCluster lab =
                MultiHostCluster.start(
                        LabCluster.Spec.of(context.model(), 2, 1, Mode.COMPAT),
                        prefix,
                        List.of("--relay.dataplane.io-timeout=" + IO_TIMEOUT.toSeconds() + "s"))) {
            try {
                long first = lab.publish(0).generation();
                lab.updateAll().requireVerified();
                long cutGeneration = lab.publish(1).generation();

                // slow the link so the engines' reads of it last seconds, cut it while they read
                lab.hosts().shapeDataLink(CUT, "2mbit");
                CompletableFuture<MultiHostCluster.Update> update =
                        CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        return lab.updateWithin(PHASE_TIMEOUT);
                                    } catch (Exception e) {
                                        throw new IllegalStateException(e);
                                    }
                                });
                Thread.sleep(CUT_AFTER.toMillis());
                lab.hosts().cutDataLink(CUT);
                long cut = System.nanoTime();
                MultiHostCluster.Update failed;
                try {
                    failed = update.get(PHASE_TIMEOUT.toSeconds() * 2, TimeUnit.SECONDS);
                } finally {
                    lab.hosts().restoreDataLink(CUT);
                    lab.hosts().unshapeDataLink(CUT);
                }
                long readBeforeFailing = failed.storeBytesRead();
                double waited = (System.nanoTime() - cut) / 1e9;
                String segment = lab.segmentOf(CUT);
                List<String> failures = new ArrayList<>();
                for (JsonNode e : failed.engines()) {
                    String outcome = e.path("outcome").asString();
                    if ("UPDATED".equals(outcome)) {
                        problems.add(
                                e.path("instance").asString()
                                        + " ended UPDATED with "
                                        + CUT
                                        + "'s link cut");
                        if (!e.path("verified").asBoolean()) {
                            corrupted++;
                        }
                        continue;
                    }
                    String error = e.path("error").asString();
                    failures.add(e.path("instance").asString() + ": " + error);
                    if (error.isBlank() || "null".equals(error)) {
                        problems.add(e.path("instance").asString() + " failed without a reason");
                    }
                }
                boolean named =
                        failures.stream()
                                .anyMatch(
                                        f ->
                                                f.contains(segment)
                                                        || f.contains(
                                                                lab.hosts().host(CUT).dataAddress())
                                                        || f.contains("PEER_GONE")
                                                        || f.contains("timed out")
                                                        || f.contains("timeout"));
                if (!named) {
                    problems.add("no failure names the cut link or a timeout: " + failures);
                }
                // The reader of the cut host fails within the transfer timeout; a peer waiting
                // for that reader's pushes waits, at most, for the update's timeout.
                double bound = PHASE_TIMEOUT.toSeconds() + IO_TIMEOUT.toSeconds() + 10;
                if (waited > bound) {
                    problems.add(
                            String.format(
                                    "the update ended %.1f s after the cut, past %.0f s",
                                    waited, bound));
                }
                boolean anyFailed = !failures.isEmpty();
                // Every engine's update failed and none ended UPDATED: the cut landed mid-update.
                landedMidUpdate = anyFailed && failures.size() == failed.engines().size();
                for (JsonNode s : lab.serving()) {
                    if (anyFailed
                            && s.has("generation")
                            && s.path("generation").asLong() == cutGeneration) {
                        partial++;
                        problems.add(
                                s.path("instance").asString() + " advanced to " + cutGeneration);
                    }
                    if (s.has("verified") && !s.path("verified").asBoolean()) {
                        partial++;
                        problems.add(
                                s.path("instance").asString()
                                        + " serves bytes not all of its generation: "
                                        + s.path("error").asString());
                    }
                }

                // the link is back: rebuild on the active generation, then the next publish
                lab.registerAll("lab");
                lab.updateAll().requireVerified();
                long next = lab.publish(2).generation();
                lab.updateAll().requireVerified();
                detail =
                        String.format(
                                "%s's data link cut during the update to %d (served %d; %d store"
                                        + " bytes read before failing): ended %.1f s after the cut (io-timeout %d s): %s; rebuilt,"
                                        + " then %d reached everyone",
                                CUT,
                                cutGeneration,
                                first,
                                readBeforeFailing,
                                waited,
                                IO_TIMEOUT.toSeconds(),
                                failures.isEmpty() ? "-" : failures.get(0),
                                next);
            } catch (Exception | AssertionError e) {
                lab.dumpLogs();
                throw e;
            }
        } catch (Exception | AssertionError e) {
            problems.add(e.getClass().getSimpleName() + ": " + e.getMessage());
            detail = "failed";
        }
        boolean passed = problems.isEmpty() && corrupted == 0 && partial == 0;
        if (!problems.isEmpty()) {
            detail = detail + "; " + String.join("; ", problems);
        }
        return new FaultResult(
                name(),
                passed,
                detail,
                corrupted,
                partial,
                0,
                (System.nanoTime() - started) / 1e9,
                true,
                landedMidUpdate);
    }
}
