package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.model.GenerationState;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Role;
import io.weightrelay.reshard.topology.Topology;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An RL loop through the real lab: fifty generations in a row, each published by the simulated
 * trainer and then updated into every rollout instance (one in compatibility mode, one
 * parameter-direct) with every received byte checked against the trainer's. Nobody collects garbage
 * (the lab's control-api has no scheduled collection), and each publisher's segment holds only
 * three of the tiny model's generations: from the fourth on, a generation fits only once the
 * retired ones are collected, so the segment wraps around every other generation, with its two ends
 * in alternation. The publishers have them collected when a reservation finds no room.
 *
 * <p>What it costs is the lab's start (control-api, two publishers, two loaders) plus the loop,
 * which it prints apart. Measured on the shared 2-core machine: 87 s in all at a load average of 12
 * (45 s to start, 38 s for the fifty generations, 0.77 s each), 165 s at 25; a quiet machine is
 * faster still, and the loop is mostly the updates' fixed round trips.
 */
class PublishSoakTest {

    private static final int GENERATIONS = 50;

    /** Each publisher's segment: room for three of the tiny model's generations, not four. */
    private static final long SEGMENT = 8L << 20;

    @RegisterExtension final RunningLabs labs = new RunningLabs();

    @Test
    void fiftyGenerationsInARowPublishAndUpdateWhileTheSegmentsWrapAround() throws Exception {
        long started = System.nanoTime();
        LabCluster lab =
                labs.add(
                        LabCluster.startWithSegments(
                                LabCluster.Spec.bothModes("tiny", 2, 1), SEGMENT));
        long largestShare = largestNodeShare(lab);
        assertThat(3 * largestShare).as("three generations fit").isLessThan(SEGMENT);
        assertThat(4 * largestShare).as("four do not").isGreaterThan(SEGMENT);

        long loopStarted = System.nanoTime();
        List<Long> published = new ArrayList<>();
        long verified = 0;
        for (int step = 0; step < GENERATIONS; step++) {
            long generation = lab.publish(step);
            published.add(generation);
            lab.updateAll().requireUpdated();
            long checked = lab.verifyAll(generation);
            assertThat(checked).as("bytes of generation %d checked", generation).isPositive();
            verified += checked;
        }

        double loop = (System.nanoTime() - loopStarted) / 1e9;
        // What the soak costs CI, in its log: the lab's start and the loop apart.
        System.out.printf(
                Locale.ROOT,
                "publish soak: lab started in %.1f s; %d generations published, updated and"
                        + " verified in %.1f s (%.2f s each); load average %.1f%n",
                (loopStarted - started) / 1e9,
                GENERATIONS,
                loop,
                loop / GENERATIONS,
                ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());

        assertThat(published).doesNotHaveDuplicates().isSorted();
        long last = published.get(GENERATIONS - 1);
        assertThat(lab.activeGeneration().getGeneration()).isEqualTo(last);
        assertThat(lab.generation(last).getState()).isEqualTo(GenerationState.ACTIVE);
        // Each segment took many times its size: retired generations went as the loop needed
        // their room, and a last collection leaves only the active one.
        assertThat(published.size() * largestShare).isGreaterThan(10 * SEGMENT);
        assertThat(lab.collectGarbageReport().getKept())
                .as("generations left after a last collection")
                .containsOnly(last);
        assertThat(verified).isPositive();
    }

    /** The most bytes one trainer node publishes of a generation. */
    private static long largestNodeShare(LabCluster lab) {
        List<Node> trainers = new ArrayList<>();
        for (int i = 0; i < lab.spec().trainerNodes(); i++) {
            trainers.add(new Node(Topology.trainerNodeName(i), Role.TRAINER, 1, 100));
        }
        long largest = 0;
        for (long b :
                PublisherAssignment.assign(lab.manifest(), new Topology(trainers)).bytesPerNode()) {
            largest = Math.max(largest, b);
        }
        return largest;
    }
}
