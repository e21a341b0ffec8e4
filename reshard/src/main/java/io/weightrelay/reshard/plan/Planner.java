package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.assign.PublisherAssignment;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.topology.Topology;

/**
 * Computes the routing plan, a pure function of (source manifest, target placement, topology), in
 * phases that each hand the next what it found:
 *
 * <ol>
 *   <li>{@link RolloutWorkers}: the rollout nodes, and each worker's node, NICs and mode;
 *   <li>{@link DemandIndex}: every consumer's demand per tensor; compatibility workers are grouped
 *       per node (one consumer per node, fanned out there);
 *   <li>{@link CutReads}: each object is cut along dim 0 at demand boundaries and at most {@code
 *       readMaxBytes} into reads whose ranges are the union of the demanded bytes (bytes nobody
 *       wants are never read), each with the runs its consumers get;
 *   <li>{@link ReaderAssignment}: each read gets one reader, largest first onto the worker whose
 *       NICs end least loaded ({@code bytes read + bytes pushed to other nodes}), preferring a
 *       consumer of the read; each remote compatibility node gets one write into a delegate chosen
 *       by least NIC ingress;
 *   <li>{@link Batches}: each reader's reads are packed in object order into batches of at most
 *       {@code batchBytes} of staging;
 *   <li>{@link PlanAssembly}: the plan's columns.
 * </ol>
 */
public final class Planner {
    /**
     * How the planner routes: a cached plan made under another version is planned again. 2: a
     * parameter-direct write that would cross the network again to a same-layout worker of a node
     * it already reaches is relayed there ({@link Plan#RELAYED}).
     */
    public static final String ROUTING_VERSION = "wr.routing.v2";

    /**
     * @param readMaxBytes upper bound of one read's span (unless a single dim-0 row is larger)
     * @param batchBytes staging bytes one reader fills per batch
     */
    public record Options(long readMaxBytes, long batchBytes) {
        public static final Options DEFAULT = new Options(16L << 20, 64L << 20);

        public Options {
            if (readMaxBytes <= 0 || batchBytes < readMaxBytes) {
                throw new IllegalArgumentException("need 0 < readMaxBytes <= batchBytes");
            }
        }
    }

    private Planner() {}

    public static Plan plan(SourceManifest manifest, TargetPlacement placement, Topology topology) {
        return plan(manifest, placement, topology, Options.DEFAULT);
    }

    public static Plan plan(
            SourceManifest manifest,
            TargetPlacement placement,
            Topology topology,
            Options options) {
        PublisherAssignment assignment = PublisherAssignment.assign(manifest, topology);
        RolloutWorkers rollout = new RolloutWorkers(topology, placement);
        DemandIndex demands = new DemandIndex(manifest, rollout);
        CutReads cut = new CutReads(manifest, demands, options.readMaxBytes());
        ReaderAssignment readers = new ReaderAssignment(rollout, demands, cut);
        Batches batches =
                Batches.pack(readers.reader, cut.readSpan, rollout.count(), options.batchBytes());
        return PlanAssembly.assemble(
                manifest,
                placement,
                topology,
                options,
                assignment,
                rollout,
                demands,
                cut,
                readers,
                batches);
    }
}
