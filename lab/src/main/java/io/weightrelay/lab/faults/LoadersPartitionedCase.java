package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabUpdate;
import io.weightrelay.lab.cluster.MultiHostCluster;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.LinkCounters;
import io.weightrelay.reshard.placement.Worker;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * On the multi-host lab, two rollout hosts, one instance each in compatibility mode: each reads
 * half the generation from the publishers and pushes it into the other's delegate. The data-plane
 * path between the two is cut both ways ({@link HostLab#partitionDataLink}) while the first pushes
 * to the second (its pushes slowed so that they last seconds, the cut made once some of them have
 * crossed), and only that path: both still reach control-api, Redis and the publishers. The update
 * must fail (a push into a peer that hears nothing cannot complete) or complete with every byte; no
 * engine advances on bytes not all of its generation; a failure names the peer across the cut; the
 * session ends within its bounds rather than freezing. With the path healed (and every route the
 * case added gone), the engines rebuild on the active generation and the next publish reaches both,
 * every byte checked on its host.
 */
final class LoadersPartitionedCase implements MultiHostFaultCase {

    /**
     * What the pushing host must have sent since the update started before the cut: above its read
     * requests and acknowledgements (tens of KB for the tiny model), so the push is under way.
     */
    private static final long PUSH_STARTED = 256 << 10;

    @Override
    public String name() {
        return "loaders-partitioned-mid-push";
    }

    @Override
    public String inject(SharedLab.BorrowedHosts borrowed, Ledger found) throws Exception {
        MultiHostCluster lab = borrowed.lab;
        HostLab hosts = lab.hostLab();
        String pusher = lab.rolloutNodes().get(0);
        String peer = lab.rolloutNodes().get(1);
        String pusherInstance = instanceOn(lab, pusher);
        String peerInstance = instanceOn(lab, peer);
        List<String> problems = found.problems;
        try {
            long first = lab.publishGeneration(borrowed.nextStep()).generation();
            LabUpdate whole = lab.updateAll().requireUpdated();
            long pushedWhole = whole.traffic().orElseThrow().hosts().get(pusher).dataSent().bytes();
            long cutGeneration = lab.publishGeneration(borrowed.nextStep()).generation();

            // the pusher's sends last seconds; the cut lands once its push is under way
            hosts.shapeDataLink(pusher, "2mbit");
            LinkCounters before = hosts.counters();
            CompletableFuture<LabUpdate> update = MultiHostFaultCase.updateAsync(lab);
            long sentAtCut = 0;
            long waitUntil = System.nanoTime() + PHASE_TIMEOUT.toNanos();
            while (!update.isDone() && System.nanoTime() < waitUntil) {
                sentAtCut = hosts.counters().minus(before).hosts().get(pusher).dataSent().bytes();
                if (sentAtCut >= PUSH_STARTED) {
                    break;
                }
                Thread.sleep(50);
            }
            boolean running = !update.isDone();
            hosts.partitionDataLink(pusher, peer);
            long cut = System.nanoTime();
            LabUpdate ended;
            int healed;
            try {
                ended = update.get(PHASE_TIMEOUT.toSeconds() * 2, TimeUnit.SECONDS);
            } finally {
                healed = hosts.healDataLink(pusher, peer);
                hosts.unshapeDataLink(pusher);
            }
            double waited = (System.nanoTime() - cut) / 1e9;
            boolean midPush = running && sentAtCut >= PUSH_STARTED && sentAtCut < pushedWhole;
            if (!midPush) {
                problems.add(
                        String.format(
                                Locale.ROOT,
                                "the cut did not land mid-push: update %s, %s had sent %d of the"
                                        + " %d bytes a whole update has it send",
                                running ? "running" : "already ended",
                                pusher,
                                sentAtCut,
                                pushedWhole));
            }
            if (healed != 2 || hosts.dataPathCut(pusher, peer) || hosts.dataPathCut(peer, pusher)) {
                problems.add("the partition's routes were not all removed (" + healed + ")");
            }

            List<String> failures = MultiHostFaultCase.failures(ended, cutGeneration, found);
            boolean peerNamed = false;
            for (LabUpdate.Engine e : ended.engines()) {
                if (e.updated()) {
                    continue;
                }
                String instance = e.instance();
                String failingPeer = Objects.requireNonNullElse(e.progress().getFailingPeer(), "");
                String across = instance.equals(pusherInstance) ? peerInstance : pusherInstance;
                String acrossHost = instance.equals(pusherInstance) ? peer : pusher;
                peerNamed |=
                        failingPeer.equals(across)
                                || LabCase.workerOf(failingPeer, across)
                                || Objects.toString(e.problem(), "")
                                        .contains(hosts.host(acrossHost).dataAddress());
            }
            boolean anyFailed = !failures.isEmpty();
            if (midPush && !anyFailed) {
                problems.add(
                        "every engine ended UPDATED although the path between "
                                + pusher
                                + " and "
                                + peer
                                + " was cut mid-push");
            }
            if (anyFailed && !peerNamed) {
                problems.add(
                        "no failure names the peer across the cut ("
                                + pusherInstance
                                + " / "
                                + peerInstance
                                + "): "
                                + failures);
            }
            // a push into a peer that hears nothing fails within the transfer timeout; the
            // session's deadline is the outer bound, never a freeze
            MultiHostFaultCase.requireEndedInTime(waited, problems);
            found.partial =
                    MultiHostFaultCase.partialServed(lab, anyFailed, cutGeneration, problems);

            // the path is back: rebuild on the active generation, then the next publish
            long next = MultiHostFaultCase.rebuildThenPublishNext(borrowed);
            found.landedMidUpdate(midPush && found.clean());
            return String.format(
                    Locale.ROOT,
                    "%s <-> %s cut during the update to %d (served %d) after %s had pushed %d of"
                            + " %d bytes: ended %.1f s after the cut (io-timeout %d s): %s;"
                            + " healed, rebuilt on %d, then %d reached both",
                    pusher,
                    peer,
                    cutGeneration,
                    first,
                    pusher,
                    sentAtCut,
                    pushedWhole,
                    waited,
                    IO_TIMEOUT.toSeconds(),
                    failures.isEmpty() ? "-" : String.join(" | ", failures),
                    cutGeneration,
                    next);
        } finally {
            hosts.healDataLink(pusher, peer);
        }
    }

    /** The instance whose workers are on rollout host {@code node}. */
    private static String instanceOn(MultiHostCluster lab, String node) {
        return lab.placement().workers().stream()
                .filter(w -> w.node().equals(node))
                .map(Worker::instance)
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no instance on " + node));
    }
}
