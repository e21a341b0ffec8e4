package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.api.control.client.model.CheckpointReport;
import io.weightrelay.api.control.client.model.CheckpointStatus;
import io.weightrelay.api.control.client.model.Generation;
import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.placement.Mode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.web.client.RestClientResponseException;

/**
 * The single-copy risk closed: a generation saved to disk survives a full restart (every service
 * stopped, Redis emptied of the run's keys, every shared-memory file the lab made removed). Fresh
 * services restore it from the checkpoint directory alone, a rollout engine loads it with every
 * byte verified, and the next publish gets the next generation id. The save calls only segment
 * owners: a loader frozen with SIGSTOP neither delays nor fails it.
 */
class CheckpointRestartLabTest {

    @RegisterExtension final RunningLabs labs = new RunningLabs();

    @Test
    void aSavedGenerationSurvivesAFullRestart(@TempDir Path dir) throws Exception {
        LabCluster lab = labs.add(LabCluster.start(LabCluster.Spec.of("tiny", 2, 1, Mode.COMPAT)));
        AtomicLong steps = new AtomicLong(1);
        saveRestartRestore(lab, dir, steps::getAndIncrement);
    }

    /**
     * The story on a started lab of two publishers (either engine): publish, update and verify,
     * save with a loader frozen, restart everything from scratch, restore, update with every byte
     * verified, publish the next generation. Its two trainer steps come from {@code steps}, so that
     * a lab shared with other tests publishes steps nobody published there yet (a step published
     * again returns the generation it opened).
     */
    static void saveRestartRestore(LabCluster lab, Path dir, LongSupplier steps) throws Exception {
        long g1 = lab.publish(steps.getAsLong());
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(g1)).isPositive();

        // A frozen loader is on no save path: the save neither waits for it nor fails.
        long frozen = lab.faults().loaderPid(0);
        CheckpointReport report;
        signal("STOP", frozen);
        try {
            long started = System.nanoTime();
            report = lab.checkpoint(g1, dir);
            double seconds = (System.nanoTime() - started) / 1e9;
            assertThat(seconds).as("save with a frozen loader").isLessThan(60);
        } finally {
            signal("CONT", frozen);
        }
        assertThat(report.getOwners()).hasSize(2);
        assertThat(report.getOwners())
                .allSatisfy(o -> assertThat(o.getError()).as(o.getSegment()).isNull());
        assertThat(report.getBytes()).isEqualTo(lab.manifest().totalBytes());
        assertThat(dir.resolve("COMPLETE")).exists();
        // The marker names the save directory that holds the manifest and the owner files.
        String marker = Files.readString(dir.resolve("COMPLETE")).trim();
        assertThat(marker).contains(" save:save-" + g1 + "-");
        assertThat(
                        dir.resolve(marker.substring(marker.indexOf(" save:") + 6))
                                .resolve("checkpoint.json"))
                .exists();
        CheckpointStatus saved = lab.checkpointStatus(g1);
        assertThat(saved.getSaved()).isTrue();
        assertThat(saved.getDirectory()).isEqualTo(dir.toString());
        assertThat(saved.getOwners()).hasSize(2);

        lab.faults()
                .restartFromScratch(
                        () -> {
                            assertThat(lab.shmFiles()).as("shared memory left").isEmpty();
                            return null;
                        });
        // The fresh cluster knows nothing of the generation.
        assertThatThrownBy(() -> lab.generation(g1))
                .isInstanceOfSatisfying(
                        RestClientResponseException.class,
                        e -> assertThat(e.getStatusCode().value()).isEqualTo(404));

        Generation restored = lab.restore(dir);
        assertThat(restored.getGeneration()).isEqualTo(g1);
        assertThat(restored.getState()).isEqualTo(GenerationState.ACTIVE);
        assertThat(lab.activeGeneration().getGeneration()).isEqualTo(g1);
        assertThat(lab.checkpointStatus(g1).getRestoredAt()).isNotNull();

        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(g1)).as("bytes verified after restore").isPositive();

        long g2 = lab.publish(steps.getAsLong());
        assertThat(g2).as("the next publish continues after the restored id").isEqualTo(g1 + 1);
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(g2)).isPositive();
        assertThat(lab.generation(g1).getState()).isEqualTo(GenerationState.RETIRED);
    }

    static void signal(String signal, long pid) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(kill.exitValue()).as("kill -" + signal + " " + pid).isZero();
    }
}
