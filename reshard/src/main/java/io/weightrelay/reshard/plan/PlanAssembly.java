package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Topology;
import java.util.List;
import java.util.Map;

/**
 * Assembles the {@link Plan} from what the planning phases found: the node, trainer, worker and
 * object tables from the inputs, the reads and their writes from the cut, the readers and
 * destinations, and the batches; fan-out writes are flagged, and notify when another worker reads.
 */
final class PlanAssembly {
    private PlanAssembly() {}

    static Plan assemble(
            SourceManifest manifest,
            TargetPlacement placement,
            Topology topology,
            Planner.Options options,
            PublisherAssignment assignment,
            RolloutWorkers rolloutWorkers,
            DemandIndex demands,
            CutReads cut,
            ReaderAssignment readers,
            Batches batches) {
        List<Node> rollout = rolloutWorkers.rollout;
        int[] objectTensor = demands.objectTensor;
        int[] reader = readers.reader;
        int[] dst = readers.dst;
        Map<String, Node> byName = topology.byName();
        List<Node> trainers = assignment.trainerNodes().stream().map(byName::get).toList();
        String[] tensorNames =
                manifest.tensors().stream().map(TensorSpec::name).toArray(String[]::new);
        List<StoredFragment> fragments = manifest.fragments();
        String[] objectIds = new String[fragments.size()];
        long[] objectBytes = new long[fragments.size()];
        int[] objectTrainer = new int[fragments.size()];
        int[] nodeOfTensor = assignment.nodeOfTensor();
        for (int o = 0; o < objectIds.length; o++) {
            objectIds[o] = fragments.get(o).fragment();
            objectBytes[o] = fragments.get(o).bytes();
            objectTrainer[o] = nodeOfTensor[objectTensor[o]];
        }
        int writes = cut.runEntity.size();
        byte[] flags = new byte[writes];
        for (int i = 0; i < cut.count(); i++) {
            for (int r = cut.readRunFirst.get(i); r < cut.readRunFirst.get(i + 1); r++) {
                if (demands.entityWorker[cut.runEntity.get(r)] < 0) {
                    flags[r] = (byte) (Plan.FANOUT | (dst[r] != reader[i] ? Plan.NOTIFY : 0));
                }
            }
        }
        return new Plan(
                new Columns.Header(
                        manifest.model(),
                        manifest.digest(),
                        placement.digest(),
                        topology.digest(),
                        options.batchBytes(),
                        batches.count()),
                Hosts.of(rollout),
                Hosts.of(trainers),
                rolloutWorkers.table(),
                demands.bufferNames(),
                tensorNames,
                new Columns.Objects(objectIds, objectBytes, objectTensor, objectTrainer),
                new Columns.Reads(
                        cut.readObject.toArray(),
                        reader,
                        batches.batch(),
                        batches.staging(),
                        cut.readStart.toArray(),
                        cut.readSpan.toArray(),
                        cut.readRangeFirst.toArray(),
                        cut.rangeStart.toArray(),
                        cut.rangeLength.toArray(),
                        cut.readRunFirst.toArray()),
                new Columns.Writes(
                        dst,
                        cut.runBuffer.toArray(),
                        flags,
                        cut.runSrc.toArray(),
                        cut.runDst.toArray(),
                        cut.runLength.toArray(),
                        cut.runLoopFirst.toArray(),
                        new Columns.Loops(
                                cut.loopCount.toArray(),
                                cut.loopSrc.toArray(),
                                cut.loopDst.toArray())));
    }
}
