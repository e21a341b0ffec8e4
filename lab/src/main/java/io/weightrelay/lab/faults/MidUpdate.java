package io.weightrelay.lab.faults;

import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * A fault injected while an update runs, the story of the cases that break a shared service
 * mid-update: generation {@code good} is published and every engine proven on it; {@code next} is
 * published and every engine updated to it, the fault injected once the update's session exists;
 * then every engine's outcome is awaited.
 *
 * <p>A tiny model's update can end within milliseconds of its session appearing, so a fault
 * injected "once the session exists" could land after it and prove nothing about mid-update faults.
 * To hold the update open, the first instance's loader is frozen (SIGSTOP) from the moment the
 * session exists until the fault has landed: the group cannot finish without it. The case then
 * requires that the update still ran when the fault landed; a fault that landed late fails the case
 * rather than passing it on an update that had already finished.
 *
 * @param good the generation every engine was proven on before the fault
 * @param next the generation the interrupted update went to
 * @param midUpdate whether the update still ran when the fault landed
 * @param outcomes how every engine's update ended
 */
record MidUpdate(long good, long next, boolean midUpdate, List<UpdateProgress> outcomes) {

    /** A fault a case injects while an update runs. */
    interface Fault {
        /** Makes the fault take effect (a process killed); returns once it has. */
        void land() throws Exception;

        /** What follows once the fault has landed, the update still running (a restart). */
        default void then() throws Exception {}

        /** A fault that lands with {@code land} and goes on with {@code then}. */
        static Fault of(Fault land, Fault then) {
            return new Fault() {
                @Override
                public void land() throws Exception {
                    land.land();
                }

                @Override
                public void then() throws Exception {
                    then.land();
                }
            };
        }
    }

    /**
     * Publishes and proves {@code good}, publishes {@code next} and updates to it with {@code
     * fault}; requires of {@code ledger} that the fault landed while the update ran.
     */
    static MidUpdate inject(SharedLab.Borrowed b, Ledger ledger, Fault fault) throws Exception {
        LabCluster lab = b.lab;
        long good = lab.publish(b.nextStep());
        ledger.checkEngines(lab, lab.updateAll().requireUpdated().results());
        long next = lab.publish(b.nextStep());
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (SessionWatch watch = new SessionWatch(lab)) {
            Future<LabUpdate> running = pool.submit(lab::updateAll);
            boolean sessionSeen = watch.awaitSession(next, running);
            long held = lab.faults().loaderPid(0);
            MidApply.signal("STOP", held);
            boolean midUpdate;
            try {
                fault.land();
                midUpdate = sessionSeen && !running.isDone();
            } finally {
                MidApply.signal("CONT", held);
            }
            fault.then();
            ledger.require(
                    midUpdate,
                    "the fault landed "
                            + (sessionSeen
                                    ? "after the update ended"
                                    : "before its session existed")
                            + ": nothing was proven about a fault mid-update");
            ledger.landedMidUpdate(midUpdate);
            return new MidUpdate(good, next, midUpdate, running.get(5, TimeUnit.MINUTES).results());
        } finally {
            pool.shutdownNow();
        }
    }

    /** {@code done} "mid-update" or "after the update ended", for a case's summary. */
    String when(String done) {
        return done + (midUpdate ? " mid-update" : " after the update ended");
    }
}
