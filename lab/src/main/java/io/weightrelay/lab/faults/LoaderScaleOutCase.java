package io.weightrelay.lab.faults;

import static io.weightrelay.lab.faults.LabCase.check;

import io.weightrelay.api.loader.client.model.TransportBytes;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;

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
        LabCase.Reloaded fresh = fault.restartLoadingAlone(index, active);
        long verified = fresh.verified();
        UpdateProgress p = fresh.progress();
        TransportBytes t = p.getTransport();
        long read = t.getLocalRead() + t.getTcpRead();
        check(read > 0, "it read the store itself");
        check(
                lab.activeGeneration().getGeneration() == active,
                "no generation was published meanwhile");
        return fresh.engine().instance()
                + " restarted and loaded active generation "
                + active
                + " alone, "
                + read
                + " bytes read from the store, "
                + verified
                + " verified, no republish";
    }
}
