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
 *       {@code batchBytes} of staging, fewer bytes when that would leave the busiest reader fewer
 *       than {@link #MIN_BATCHES} batches ({@link #batchBytes});
 *   <li>{@link PlanAssembly}: the plan's columns.
 * </ol>
 */
public final class Planner {
    /**
     * How the planner routes: a cached plan made under another version is planned again. 2: a
     * parameter-direct write that would cross the network again to a same-layout worker of a node
     * it already reaches is relayed there ({@link Plan#RELAYED}). 3: a small reader's batches
     * shrink to at most 1/{@link #MIN_BATCHES} of its bytes.
     */
    public static final String ROUTING_VERSION = "wr.routing.v3";

    /**
     * Fewest batches the busiest reader's reads are packed into, unless that would make a batch
     * smaller than a read. The pipeline's bubbles are one batch's read before the first push and
     * one batch's push after the last read, so a batch of at most 1/16 of the busiest reader's
     * bytes keeps them a small share of the update at any link rate; a large model's readers fill
     * {@code batchBytes} batches by the hundred and are not affected.
     */
    public static final int MIN_BATCHES = 16;

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
        Options used =
                new Options(
                        options.readMaxBytes(),
                        batchBytes(readers.reader, cut.readSpan, rollout.count(), options));
        Batches batches =
                Batches.pack(readers.reader, cut.readSpan, rollout.count(), used.batchBytes());
        return PlanAssembly.assemble(
                manifest,
                placement,
                topology,
                used,
                assignment,
                rollout,
                demands,
                cut,
                readers,
                batches);
    }

    /**
     * The staging bytes of a batch: {@code options.batchBytes()}, or less, so that the busiest
     * reader's reads fill at least {@link #MIN_BATCHES} batches, but never less than the largest
     * read nor than {@code options.readMaxBytes()}.
     */
    static long batchBytes(int[] reader, LongList readSpan, int workers, Options options) {
        long[] read = new long[workers];
        long largest = 0;
        for (int i = 0; i < reader.length; i++) {
            long span = readSpan.get(i);
            read[reader[i]] += span;
            largest = Math.max(largest, span);
        }
        long busiest = 0;
        for (long bytes : read) {
            busiest = Math.max(busiest, bytes);
        }
        long floor = Math.max(options.readMaxBytes(), largest);
        long share = (busiest + MIN_BATCHES - 1) / MIN_BATCHES;
        return Math.min(options.batchBytes(), Math.max(floor, share));
    }
}
