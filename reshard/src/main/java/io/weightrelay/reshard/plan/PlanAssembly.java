package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.topology.Node;
import io.weightrelay.reshard.topology.Topology;
import java.util.Arrays;
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
        Relays relays = Relays.of(cut, reader, dst, rolloutWorkers.wNode, readers.lead, flags);
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
                relays.any ? reordered(cut, dst, relays) : writes(cut, dst, relays.flags));
    }

    private static Columns.Writes writes(CutReads cut, int[] dst, byte[] flags) {
        return new Columns.Writes(
                dst,
                cut.runBuffer.toArray(),
                flags,
                cut.runSrc.toArray(),
                cut.runDst.toArray(),
                cut.runLength.toArray(),
                cut.runLoopFirst.toArray(),
                new Columns.Loops(
                        cut.loopCount.toArray(), cut.loopSrc.toArray(), cut.loopDst.toArray()));
    }

    /** The writes in the relays' order: each read's writes stay within the read's rows. */
    private static Columns.Writes reordered(CutReads cut, int[] dst, Relays relays) {
        int[] order = relays.order;
        int n = order.length;
        int[] outDst = new int[n];
        int[] buffer = new int[n];
        long[] src = new long[n];
        long[] dstOffset = new long[n];
        long[] length = new long[n];
        int[] loopFirst = new int[n + 1];
        int loops = cut.loopCount.size();
        long[] count = new long[loops];
        long[] loopSrc = new long[loops];
        long[] loopDst = new long[loops];
        int at = 0;
        for (int k = 0; k < n; k++) {
            int r = order[k];
            outDst[k] = dst[r];
            buffer[k] = cut.runBuffer.get(r);
            src[k] = cut.runSrc.get(r);
            dstOffset[k] = cut.runDst.get(r);
            length[k] = cut.runLength.get(r);
            loopFirst[k] = at;
            for (int l = cut.runLoopFirst.get(r); l < cut.runLoopFirst.get(r + 1); l++) {
                count[at] = cut.loopCount.get(l);
                loopSrc[at] = cut.loopSrc.get(l);
                loopDst[at++] = cut.loopDst.get(l);
            }
        }
        loopFirst[n] = at;
        return new Columns.Writes(
                outDst,
                buffer,
                relays.flags,
                src,
                dstOffset,
                length,
                loopFirst,
                new Columns.Loops(
                        Arrays.copyOf(count, at),
                        Arrays.copyOf(loopSrc, at),
                        Arrays.copyOf(loopDst, at)));
    }
}
