package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabCluster;
import java.util.Set;

/**
 * Fault case 8: two control-api instances behind the same Redis and key prefix; every publisher,
 * loader and the trainer is given both URLs ({@link io.weightrelay.api.BaseUrlFailover}) and talks
 * to the first while it answers. The first is killed with SIGKILL while an update runs (its session
 * exists): the update must complete through the second, every engine on the new generation with
 * every byte of it; nothing committed is lost, and the next publish and update work with the first
 * still dead.
 */
public final class ControlApiKilledCase extends MidUpdateCase {

    public ControlApiKilledCase() {
        super("control-api-killed");
    }

    @Override
    public FaultResult run(FaultContext context) throws Exception {
        try {
            return super.run(context);
        } finally {
            // The first control-api stays dead: the lab is not the one the other cases expect.
            SharedLab.discard(context);
        }
    }

    @Override
    FaultResult prove(SharedLab.Borrowed b, long started) throws Exception {
        LabCluster lab = b.lab;
        Ledger ledger = new Ledger();
        MidUpdate update = MidUpdate.inject(b, ledger, () -> lab.faults().killControlApi(0));
        long next = update.next();
        ledger.checkEngines(lab, update.outcomes());
        ledger.requireUpdatedTo(
                update.outcomes(), next, "update (to complete through the second control-api)");
        ledger.requireHeld(lab, Set.of(next));
        ledger.requireCommitted(lab, update.good(), next);
        long after = ledger.serveNext(lab, b.nextStep());
        return ledger.result(
                name(),
                update.when("killed")
                        + "; outcomes "
                        + Ledger.ends(update.outcomes())
                        + "; next "
                        + after
                        + " served by the second instance",
                started,
                claimsMidUpdate());
    }
}
