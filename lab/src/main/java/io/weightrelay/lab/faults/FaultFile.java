package io.weightrelay.lab.faults;

import io.weightrelay.lab.cluster.LabCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A lab-only loader fault that is on while a file exists ({@code relay.loader.flaky-reads-file},
 * {@code relay.loader.flip-received-file}): one instance's loader is started again with the
 * property naming the file, absent at first, and the group, that fresh loader too, is proven
 * healthy on the active generation before the case turns the fault on.
 *
 * @param path the file whose existence turns the fault on
 * @param active the generation the group was proven on
 */
record FaultFile(Path path, long active) implements AutoCloseable {

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
            return new FaultFile(path, active);
        } catch (Exception | Error e) {
            Files.deleteIfExists(path);
            throw e;
        }
    }

    /** Turns the fault on; {@code mode} is what the loader reads from the file. */
    void on(String mode) throws IOException {
        Files.writeString(path, mode);
    }

    void off() throws IOException {
        Files.delete(path);
    }

    @Override
    public void close() throws IOException {
        Files.deleteIfExists(path);
    }
}
