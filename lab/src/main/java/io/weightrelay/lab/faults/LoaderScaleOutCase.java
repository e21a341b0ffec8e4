package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.UPDATE_TIMEOUT;
import static io.weightrelay.lab.faults.LabCase.UPDATE_WAIT;
import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.loader.client.model.TransportBytes;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.util.List;

/**
 * Case 6: an instance's loader is killed (SIGKILL) and a fresh one starts in its place, as a
 * scale-out or a restart brings one up: registered alone, it loads the active generation from the
 * store by itself, byte for byte, with no republish (no generation is opened meanwhile).
 */
final class LoaderScaleOutCase {

    private LoaderScaleOutCase() {}

    static String inject(LabCase.Fault fault) throws Exception {
        LabCluster lab = fault.lab();
        long active = fault.active();
        int index = lab.engines().size() - 1;
        RolloutEngine fresh = lab.restartInstance(index);
        List<Engines.Ended> ended = Engines.update(List.of(fresh), UPDATE_TIMEOUT, UPDATE_WAIT);
        Engines.Ended e = ended.get(0);
        check(e.updated(), "the new loader's update: " + e.describe());
        UpdateProgress p = e.progress();
        check(p.getGeneration() == active, "it loaded " + p.getGeneration() + ", not " + active);
        long verified = lab.verify(fresh, active);
        TransportBytes t = p.getTransport();
        long read = t.getLocalRead() + t.getTcpRead();
        check(read > 0, "it read the store itself");
        check(
                lab.activeGeneration().getGeneration() == active,
                "no generation was published meanwhile");
        return fresh.instance()
                + " restarted and loaded active generation "
                + active
                + " alone, "
                + read
                + " bytes read from the store, "
                + verified
                + " verified, no republish";
    }
}
