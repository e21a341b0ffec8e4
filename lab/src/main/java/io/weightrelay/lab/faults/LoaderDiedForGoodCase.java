package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.control.client.model.GcReport;
import io.weightrelay.api.control.client.model.Loader;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LoaderTimings;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.web.client.RestClientResponseException;

/**
 * An instance's loader is killed (SIGKILL) and nothing restarts it, as when a node is lost: its
 * registration expires, the rest of the group goes on to the trainer's next generation, and the
 * generation the dead loader served, now retired, is collected once the lease the dead loader held
 * on it lapses. A loader's lease lives only as long as its heartbeats carry it ({@link
 * LoaderTimings#LOADER_LEASE_TTL} in the lab); when it lasted a fixed hour, a dead loader kept its
 * generation from collection for that hour and could fill the trainers' store. The trainer then
 * publishes once more and the instance is brought back with a fresh loader; the generation the
 * survivors serve, retired by that publish, is still kept past the lease they took on it, since
 * their heartbeats carry it.
 */
final class LoaderDiedForGoodCase {

    private LoaderDiedForGoodCase() {}

    /**
     * How long after the kill the generation may still be kept: the dead loader's lease lasts at
     * most {@link LoaderTimings#LOADER_LEASE_TTL} past its last prepare or its registration's TTL
     * ({@link LoaderTimings#LOADER_TTL}) past its last heartbeat; the rest is the survivors' update
     * on a loaded machine.
     */
    static final Duration COLLECTED_WITHIN = LoaderTimings.LOADER_LEASE_TTL.plusSeconds(90);

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        long served = fault.active();
        int index = lab.engines().size() - 1;
        String dead = lab.engines().get(index).instance();
        long killed = System.nanoTime();
        lab.faults().killLoader(index);

        // control-api drops the dead loader from its group once its registration expires; the
        // group's next plan is the survivors'.
        awaitGone(lab, dead, killed);
        double goneAfter = seconds(killed);
        List<RolloutEngine> survivors = new ArrayList<>(lab.engines());
        survivors.remove(index);
        long next = fault.publish();
        long survivorsPrepared = System.nanoTime();
        LabCase.requireUpdatedTo(survivors, next, "a survivor's update to");
        long verified = lab.verify(survivors, next);

        // The survivors released their leases on the generation they served before; the dead
        // loader cannot release its own, so only its lapsing lets the collection take it.
        int collections = 0;
        while (true) {
            GcReport report = collectGarbage(lab, fault);
            collections++;
            if (report.getCollected() != null && report.getCollected().contains(served)) {
                break;
            }
            check(
                    seconds(killed) < COLLECTED_WITHIN.toSeconds(),
                    "generation "
                            + served
                            + ", which only the dead loader "
                            + dead
                            + " still served, is kept "
                            + Math.round(seconds(killed))
                            + " s after it died");
            Thread.sleep(1_000);
        }
        double collectedAfter = seconds(killed);

        // The trainer goes on: the whole group, the restarted instance too, next loads a
        // generation it has no session of yet (the survivors' session of `next` had them alone).
        long after = fault.publish();
        RolloutEngine fresh = lab.restartInstance(index);

        // `next` is retired now too, but the survivors still serve it and are alive: their
        // heartbeats carry the leases they took on it well past the lease's own TTL.
        long carriedUntil =
                survivorsPrepared + LoaderTimings.LOADER_LEASE_TTL.plusSeconds(5).toNanos();
        while (System.nanoTime() < carriedUntil) {
            Thread.sleep(500);
        }
        GcReport late = collectGarbage(lab, fault);
        check(
                late.getKept() != null && late.getKept().contains(next),
                "generation "
                        + next
                        + ", which the live survivors serve, was collected once the lease they"
                        + " took at prepare ("
                        + LoaderTimings.LOADER_LEASE_TTL.toSeconds()
                        + " s) passed: their heartbeats did not carry it");
        return String.format(
                java.util.Locale.ROOT,
                "%s killed for good: its registration expired after %.1f s; the %d survivors"
                        + " updated to %d (%d bytes verified); generation %d it served was"
                        + " collected %.1f s after the kill (%d collections); %s restarted;"
                        + " %d published for the whole group; %d, which the survivors serve,"
                        + " still kept %.0f s after they leased it",
                dead,
                goneAfter,
                survivors.size(),
                next,
                verified,
                served,
                collectedAfter,
                collections,
                fresh.instance(),
                after,
                next,
                seconds(survivorsPrepared));
    }

    /**
     * Runs a collection and records what it removed as no longer committed, so the suite's check
     * that committed generations survive does not count them.
     */
    private static GcReport collectGarbage(LabCluster lab, LabCase.Fault fault) {
        GcReport report = lab.collectGarbageReport();
        if (report.getCollected() != null) {
            report.getCollected().forEach(fault::collected);
        }
        return report;
    }

    /** Waits until control-api no longer counts {@code instance}'s loader as alive. */
    static void awaitGone(LabCluster lab, String instance, long killed)
            throws InterruptedException {
        while (true) {
            try {
                Loader l = lab.loader(instance);
                if (!Boolean.TRUE.equals(l.getAlive())) {
                    return;
                }
            } catch (RestClientResponseException e) {
                if (e.getStatusCode().value() == 404) {
                    return;
                }
                throw e;
            }
            check(
                    seconds(killed) < 60,
                    "control-api still counts the dead loader " + instance + " alive after 60 s");
            Thread.sleep(500);
        }
    }

    private static double seconds(long since) {
        return (System.nanoTime() - since) / 1e9;
    }
}
