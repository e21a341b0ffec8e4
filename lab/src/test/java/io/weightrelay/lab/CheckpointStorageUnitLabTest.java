package io.weightrelay.lab;

import static io.weightrelay.lab.CheckpointRestartLabTest.signal;
import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.model.CheckpointReport;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.topology.Topology;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A save calls only segment owners. The trainer node runs a storage unit (the only owner of store
 * memory) and a client-only publisher beside the trainer ranks, which stores into the unit; with
 * the loader and the client-only publisher frozen (SIGSTOP), saves take about as long as with
 * nothing frozen and none fails. Saves alternate, frozen and not, so the machine's load weighs on
 * both alike; the figure compared is the ratio of their medians, never an absolute time.
 */
class CheckpointStorageUnitLabTest {

    private static final int ROUNDS = 5;

    @RegisterExtension final RunningLabs labs = new RunningLabs();

    @Test
    void aSaveCallsOnlyTheStorageUnitsNeverAFrozenLoaderOrClientOnlyPublisher(@TempDir Path dir)
            throws Exception {
        LabCluster.Spec spec =
                new LabCluster.Spec(
                        "tiny",
                        1,
                        1,
                        Mode.COMPAT,
                        1,
                        1,
                        1,
                        LabCluster.Site.local(),
                        LabCluster.Serving.TENSOR_PARALLEL);
        LabCluster lab = labs.add(LabCluster.startWithStorageUnits(spec));
        long g = lab.publish(1);
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(g)).as("bytes verified").isPositive();
        String unit = lab.segmentNameOf(Topology.trainerNodeName(0));
        long[] frozen = {lab.faults().loaderPid(0), lab.faults().publisherPid(0)};

        List<Double> free = new ArrayList<>();
        List<Double> stopped = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            free.add(save(lab, g, dir.resolve("free-" + round), unit));
            for (long pid : frozen) {
                signal("STOP", pid);
            }
            try {
                stopped.add(save(lab, g, dir.resolve("frozen-" + round), unit));
            } finally {
                for (long pid : frozen) {
                    signal("CONT", pid);
                }
            }
        }
        double ratio = median(stopped) / median(free);
        System.out.printf(
                "checkpoint saves: free %s s, loader and client-only publisher frozen %s"
                        + " s, ratio of medians %.2f%n",
                free, stopped, ratio);
        assertThat(ratio)
                .as(
                        "median save with a frozen loader and client-only publisher over"
                                + " the median without (free %s, frozen %s)",
                        free, stopped)
                .isLessThan(3.0);

        // The thawed client-only publisher stores the next generation into the unit.
        long g2 = lab.publish(2);
        lab.updateAll().requireUpdated();
        assertThat(lab.verifyAll(g2)).as("bytes verified").isPositive();
    }

    /** One save of {@code g}, which only {@code unit} may serve; its seconds. */
    private static double save(LabCluster lab, long g, Path dir, String unit) {
        long started = System.nanoTime();
        CheckpointReport report = lab.checkpoint(g, dir);
        double seconds = (System.nanoTime() - started) / 1e9;
        assertThat(report.getOwners())
                .singleElement()
                .satisfies(
                        o -> {
                            assertThat(o.getSegment()).isEqualTo(unit);
                            assertThat(o.getError()).as(o.getSegment()).isNull();
                        });
        assertThat(report.getBytes()).isEqualTo(lab.manifest().totalBytes());
        assertThat(dir.resolve("COMPLETE")).exists();
        return seconds;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        return sorted.get(sorted.size() / 2);
    }
}
