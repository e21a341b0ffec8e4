package io.weightrelay.lab.faults;

import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The only control-api of a lab (every publisher, loader and the trainer has its one URL and
 * nowhere to fail over to) is killed with SIGKILL while an update runs and started again on the
 * same port, the update still in flight: unlike {@code control-api-killed}, which kills one of two
 * instances and leaves it dead while the other serves, here nobody answers until the same instance
 * is back. The services must wait for it (their calls retried with backoff, bounded), not fail the
 * group: the update completes once control-api is back, or ends cleanly with every engine resumed
 * on the generation it had, and then the next update attempt, with no operator action (no rebuild,
 * no new publish), brings every engine to the new generation. No engine advances on bytes that are
 * not all of its generation, nothing committed is lost, and the next publish reaches everyone.
 */
final class ControlApiRestartedCase extends MidUpdateCase {

    ControlApiRestartedCase() {
        super("control-api-restarted-mid-update");
    }

    @Override
    SharedLab.Shape shape() {
        return SharedLab.Shape.COMPAT_ONE_CONTROL_API;
    }

    @Override
    FaultResult prove(SharedLab.Borrowed b, long started) throws Exception {
        LabCluster lab = b.lab;
        Ledger ledger = new Ledger();
        long[] down = new long[2];
        MidUpdate update =
                MidUpdate.inject(
                        b,
                        ledger,
                        MidUpdate.Fault.of(
                                () -> {
                                    down[0] = System.nanoTime();
                                    lab.faults().killControlApi(0);
                                },
                                () -> {
                                    lab.faults().startControlApiAgain(0);
                                    down[1] = System.nanoTime();
                                }));
        double outage = (down[1] - down[0]) / 1e9;
        long good = update.good();
        long next = update.next();
        ledger.checkEngines(lab, update.outcomes());
        List<String> ends = Ledger.ends(update.outcomes());
        int updated = 0;
        for (UpdateProgress p : update.outcomes()) {
            boolean done = p.getOutcome() == UpdateOutcome.UPDATED && p.getGeneration() == next;
            boolean resumed = p.getOutcome() == UpdateOutcome.RESUMED_OLD;
            if (done) {
                updated++;
            }
            // A paused engine waits for a rebuild, an operator's action: a control-api that
            // restarted must not leave one behind.
            ledger.require(
                    done || resumed,
                    "update "
                            + p.getUpdateId()
                            + " neither completed nor resumed on "
                            + good
                            + ": "
                            + p.getOutcome()
                            + " at "
                            + p.getGeneration()
                            + ": "
                            + p.getError());
        }
        ledger.require(
                updated == 0 || updated == update.outcomes().size(),
                "the group split over the restart: " + ends);
        // Resumed engines are back on the generation they had: nothing of the interrupted one.
        ledger.requireHeld(lab, updated == 0 ? Set.of(good) : Set.of(next));
        ledger.requireCommitted(lab, good, next);

        String retried = "";
        if (updated < update.outcomes().size()) {
            // Ended cleanly: the next attempt (the engines' own, to the active generation) must
            // succeed as it is, with no rebuild and no new publish.
            LabUpdate again = lab.updateAll();
            ledger.checkEngines(lab, again.results());
            ledger.requireUpdatedTo(
                    again.results(), next, "the next attempt after control-api returned");
            retried = "; the next attempt " + Ledger.ends(again.results());
        }
        ledger.requireHeld(lab, Set.of(next));
        long after = ledger.serveNext(lab, b.nextStep());
        ledger.requireCommitted(lab, good, next);
        return ledger.result(
                name(),
                update.when("killed")
                        + String.format(
                                Locale.ROOT, ", back on its port %.1f s later; outcomes ", outage)
                        + ends
                        + retried
                        + "; next "
                        + after
                        + " served",
                started,
                claimsMidUpdate());
    }
}
