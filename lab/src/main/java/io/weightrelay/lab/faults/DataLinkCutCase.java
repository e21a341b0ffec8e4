package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.cluster.MultiHostCluster;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Case 9, on the multi-host lab: one trainer host's data-plane link is cut (its bridge port down:
 * frames dropped silently, as a pulled cable) while the rollout hosts read from it. Every read of
 * it times out after the configured {@code relay.dataplane.io-timeout}, every engine's update ends
 * failed naming the failure, none advances or serves bytes not all of its generation, and nothing
 * waits much longer than that timeout. With the link back, the engines rebuild on the active
 * generation and the next publish reaches everyone, every byte checked on its host.
 */
final class DataLinkCutCase implements MultiHostFaultCase {

    private static final String CUT = "trainer-0001";

    /** How long after the update starts the link is cut: prepare is done, the reads are on. */
    private static final Duration CUT_AFTER = Duration.ofSeconds(3);

    @Override
    public String name() {
        return "data-link-cut-mid-apply";
    }

    @Override
    public String inject(SharedLab.BorrowedHosts borrowed, Ledger found) throws Exception {
        MultiHostCluster lab = borrowed.lab;
        long first = lab.publishGeneration(borrowed.nextStep()).generation();
        lab.updateAll().requireUpdated();
        long cutGeneration = lab.publishGeneration(borrowed.nextStep()).generation();

        // slow the link so the engines' reads of it last seconds, cut it while they read
        lab.hostLab().shapeDataLink(CUT, "2mbit");
        CompletableFuture<LabUpdate> update = MultiHostFaultCase.updateAsync(lab);
        Thread.sleep(CUT_AFTER.toMillis());
        lab.hostLab().cutDataLink(CUT);
        long cut = System.nanoTime();
        LabUpdate failed;
        try {
            failed = update.get(PHASE_TIMEOUT.toSeconds() * 2, TimeUnit.SECONDS);
        } finally {
            lab.hostLab().restoreDataLink(CUT);
            lab.hostLab().unshapeDataLink(CUT);
        }
        long readBeforeFailing = failed.storeBytesRead();
        double waited = (System.nanoTime() - cut) / 1e9;
        String segment = lab.segmentOf(CUT);
        for (LabUpdate.Engine e : failed.engines()) {
            if (e.updated()) {
                found.problems.add(e.instance() + " ended UPDATED with " + CUT + "'s link cut");
            }
        }
        List<String> failures = MultiHostFaultCase.failures(failed, cutGeneration, found);
        String address = lab.hostLab().host(CUT).dataAddress();
        boolean named =
                failures.stream()
                        .anyMatch(
                                f ->
                                        f.contains(segment)
                                                || f.contains(address)
                                                || f.contains("PEER_GONE")
                                                || f.contains("timed out")
                                                || f.contains("timeout"));
        if (!named) {
            found.problems.add("no failure names the cut link or a timeout: " + failures);
        }
        // The reader of the cut host fails within the transfer timeout; a peer waiting for that
        // reader's pushes waits, at most, for the update's timeout.
        MultiHostFaultCase.requireEndedInTime(waited, found.problems);
        boolean anyFailed = !failures.isEmpty();
        // Every engine's update failed and none ended UPDATED: the cut landed mid-update.
        found.landedMidUpdate(anyFailed && failures.size() == failed.engines().size());
        found.partial =
                MultiHostFaultCase.partialServed(lab, anyFailed, cutGeneration, found.problems);

        // the link is back: rebuild on the active generation, then the next publish
        long next = MultiHostFaultCase.rebuildThenPublishNext(borrowed);
        return String.format(
                "%s's data link cut during the update to %d (served %d; %d store bytes read before"
                        + " failing): ended %.1f s after the cut (io-timeout %d s): %s; rebuilt,"
                        + " then %d reached everyone",
                CUT,
                cutGeneration,
                first,
                readBeforeFailing,
                waited,
                IO_TIMEOUT.toSeconds(),
                failures.isEmpty() ? "-" : failures.get(0),
                next);
    }
}
