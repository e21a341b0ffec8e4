package io.weightrelay.loader.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.topology.Topology;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * What a loader's schedule tells its prepare about memory: the staging it needs (never more than
 * what registration creates) and the peers' segments it writes into (opened before the apply).
 */
class SliceScheduleTest {
    private static final SourceManifest MANIFEST =
            Fragmenter.fragment("tiny", ModelCatalog.tensors("tiny"), 256 << 10);

    /** Four instances of two workers, two per rollout node, at control-api's batch size. */
    private static final TargetPlacement PLACEMENT =
            Placements.of(ModelCatalog.layout("tiny"), 2, 4, 2, 1, Mode.COMPAT, 1);

    private static final Plan PLAN =
            Planner.plan(MANIFEST, PLACEMENT, Topology.uniform(2, 2, 1, 100));

    private static final BufferDirectory DIRECTORY =
            new BufferDirectory(TestBuffers.compatImages(PLACEMENT, 8L << 20));

    private static SliceSchedule schedule(String instance) {
        return new SliceSchedule(Slice.of(PLAN, instance), DIRECTORY);
    }

    private static Set<String> segmentsOf(String instance) {
        return PLACEMENT.workers().stream()
                .filter(w -> w.instance().equals(instance))
                .map(Worker::segment)
                .collect(Collectors.toSet());
    }

    @Test
    void theStagingCreatedAtRegistrationHoldsWhatAnyLoaderNeedsAndANonReaderNeedsNone() {
        for (String instance : PLACEMENT.instances()) {
            SliceSchedule s = schedule(instance);
            long needed = PipelineExecutor.stagingBytes(s, 2);
            assertThat(needed)
                    .as(instance)
                    .isLessThanOrEqualTo(ReadStaging.upperBound(2, segmentsOf(instance).size()));
            boolean reads = IntStream.range(0, s.batchCount()).anyMatch(b -> !s.reads(b).isEmpty());
            if (!reads) {
                assertThat(s.slotBytes()).as(instance).isZero();
                assertThat(needed).as(instance).isZero();
            } else {
                assertThat(s.slotBytes()).as(instance).isPositive();
            }
        }
    }

    /**
     * Derived from the whole plan, apart from the schedule: a reader's writes into another
     * instance's worker, and a delegate's fan-outs to the compat workers of other instances on its
     * node.
     */
    @Test
    void eachLoaderOpensExactlyTheOtherInstancesSegmentsItsApplyWritesInto() {
        Map<String, Worker> workers = new HashMap<>();
        PLACEMENT.workers().forEach(w -> workers.put(w.id(), w));
        Map<String, Set<String>> expected = new HashMap<>();
        PLACEMENT.instances().forEach(i -> expected.put(i, new TreeSet<>()));
        for (int i = 0; i < PLAN.readCount(); i++) {
            Worker reader = workers.get(PLAN.workerId(PLAN.readReader(i)));
            for (int w = PLAN.writeFirst(i); w < PLAN.writeEnd(i); w++) {
                Worker dst = workers.get(PLAN.workerId(PLAN.writeDst(w)));
                if (!dst.instance().equals(reader.instance())) {
                    expected.get(reader.instance()).add(dst.segment());
                }
                if ((PLAN.writeFlags(w) & Plan.FANOUT) != 0) {
                    for (Worker p : PLACEMENT.workers()) {
                        if (p.node().equals(dst.node()) && !p.instance().equals(dst.instance())) {
                            expected.get(dst.instance()).add(p.segment());
                        }
                    }
                }
            }
        }
        assertThat(expected.values().stream().mapToInt(Set::size).sum()).isPositive();
        for (String instance : PLACEMENT.instances()) {
            assertThat(schedule(instance).peerSegments())
                    .as(instance)
                    .containsExactlyInAnyOrderElementsOf(expected.get(instance))
                    .doesNotContainAnyElementsOf(segmentsOf(instance));
        }
    }

    /**
     * Parameter-direct, two same-layout instances per node: what crosses to a node once is copied
     * there by the loader of the delegate it landed in, which opens the relayed destinations'
     * segments and waits for the writer's batch before it copies; the reader sends no relayed byte.
     */
    @Test
    void aDirectDelegateRelaysOnItsNodeWhatCrossedOnceAndTheReaderDoesNotSendIt() {
        TargetPlacement placement =
                Placements.of(ModelCatalog.layout("tiny"), 2, 4, 2, 1, Mode.DIRECT, 1);
        Plan plan = Planner.plan(MANIFEST, placement, Topology.uniform(2, 2, 1, 100));
        BufferDirectory directory =
                new BufferDirectory(
                        placement.workers().stream()
                                .map(w -> new WorkerBuffers(w.id(), Cluster.buffersOf(w, 0)))
                                .toList());
        long relayed = 0;
        long sent = 0;
        Map<String, Set<String>> relayTargets = new HashMap<>();
        for (int i = 0; i < plan.readCount(); i++) {
            String delegate = null;
            for (int w = plan.writeFirst(i); w < plan.writeEnd(i); w++) {
                if ((plan.writeFlags(w) & Plan.RELAYED) == 0) {
                    delegate = plan.workerInstance(plan.writeDst(w));
                    sent += plan.writeBytes(w);
                    continue;
                }
                relayed += plan.writeBytes(w);
                String to = plan.workerInstance(plan.writeDst(w));
                if (!to.equals(delegate)) {
                    relayTargets
                            .computeIfAbsent(delegate, k -> new TreeSet<>())
                            .add(plan.workerSegment(plan.writeDst(w)));
                }
            }
        }
        assertThat(relayed).isPositive();
        long total = 0;
        long received = 0;
        for (String instance : placement.instances()) {
            SliceSchedule s = new SliceSchedule(Slice.of(plan, instance), directory);
            total += s.totalBytes();
            received += s.receiveBytes();
            assertThat(s.peerSegments())
                    .as(instance)
                    .containsAll(relayTargets.getOrDefault(instance, Set.of()));
            boolean relays =
                    s.fanOutGroups().stream()
                            .flatMap(g -> g.writes().stream())
                            .anyMatch(v -> !s.copyTargets(v).isEmpty());
            assertThat(relays).as(instance).isEqualTo(relayTargets.containsKey(instance));
        }
        // reads, plus each write once: by its reader, or as a relayed copy by its delegate
        assertThat(total).isEqualTo(MANIFEST.totalBytes() + sent + relayed);
        assertThat(received).isEqualTo(sent + relayed);
    }
}
