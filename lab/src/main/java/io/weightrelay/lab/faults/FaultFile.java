package io.weightrelay.lab.faults;

import io.weightrelay.api.control.client.model.UpdateSession;
import io.weightrelay.lab.cluster.LabCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * A lab-only loader fault that is on while a file exists ({@code relay.loader.flaky-reads-file},
 * {@code relay.loader.flip-received-file}): one instance's loader is started again with the
 * property naming the file, absent at first, and the group, that fresh loader too, is proven
 * healthy on the active generation before the case turns the fault on.
 *
 * @param fault the running lab
 * @param loader the index of the instance whose loader has the fault
 * @param path the file whose existence turns the fault on
 * @param active the generation the group was proven on
 */
record FaultFile(LabCase.Fault fault, int loader, Path path, long active) implements AutoCloseable {

    /** An update the fault was on for: its generation, how each engine ended, the session. */
    record Attempt(long generation, List<Engines.Ended> ended, UpdateSession session) {}

    /**
     * Restarts loader {@code index} watching a fresh file named by {@code relay.loader.<property>}.
     */
    static FaultFile onLoader(LabCase.Fault fault, int index, String property) throws Exception {
        Path path = Files.createTempFile("wr-" + property + "-", "");
        Files.delete(path);
        try {
            LabCluster lab = fault.lab();
            lab.faults().restartLoader(index, List.of("--relay.loader." + property + "=" + path));
            long active = lab.activeGeneration().getGeneration();
            LabCase.requireUpdated(lab, active, fault.ledger());
            return new FaultFile(fault, index, path, active);
        } catch (Exception | Error e) {
            Files.deleteIfExists(path);
            throw e;
        }
    }

    /** The instance whose loader has the fault. */
    String instance() {
        return fault.lab().engines().get(loader).instance();
    }

    /**
     * Turns the fault on ({@code mode} is what the loader reads from the file), publishes the
     * trainer's next step and updates every engine to it, each update with {@link
     * LoaderKilledMidApplyCase#PHASE_TIMEOUT}: the ledger records any engine that advanced and what
     * every engine serves.
     */
    Attempt update(String mode) throws Exception {
        Files.writeString(path, mode);
        long g = fault.publish();
        List<Engines.Ended> ended =
                fault.updateNoneAdvancing(LoaderKilledMidApplyCase.PHASE_TIMEOUT);
        fault.ledger().observe(fault.lab(), Set.of());
        return new Attempt(g, ended, fault.lab().session(g, "lab"));
    }

    /** Turns the fault off: the same loader process reads and receives as it should again. */
    void off() throws IOException {
        Files.delete(path);
    }

    @Override
    public void close() throws IOException {
        Files.deleteIfExists(path);
    }
}
