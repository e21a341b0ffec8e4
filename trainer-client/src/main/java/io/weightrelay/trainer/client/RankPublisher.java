package io.weightrelay.trainer.client;

import io.weightrelay.api.common.model.Dtype;
import io.weightrelay.api.publisher.client.model.PublishBatchResult;
import io.weightrelay.api.publisher.client.model.PublishStatus;
import io.weightrelay.api.publisher.client.model.Reservation;
import io.weightrelay.api.publisher.client.model.StagedTensor;
import io.weightrelay.reshard.manifest.BlockScales;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.zip.CRC32C;

/**
 * What one rank does for one generation: walk the manifest's tensors in order; for each tensor its
 * node publishes, write it into a reservation of the node's staging area; hand each full batch over
 * with one REST call (up to {@link Options#inFlight} batches in flight while the next is written);
 * keep walking after a failure (the collective order of the ranks must not diverge) but hand
 * nothing more over; finish; report.
 *
 * <p>Tensors larger than a batch are cut into parts on stored-fragment boundaries. Not thread safe:
 * one instance per rank and generation.
 */
public final class RankPublisher {

    private static final int ALIGN = 64;

    private final PublisherClient publisher;
    private final String node;
    private final Options options;

    /**
     * How a rank publishes.
     *
     * @param inFlight batches handed over but not answered yet, at most
     * @param stageAll write every batch before handing the first over (benchmarks separate the
     *     trainer's writing from the publish path this way; needs staging for all of it)
     * @param reserveTimeout how long to wait for room while staging is full
     */
    public record Options(int inFlight, boolean stageAll, Duration reserveTimeout) {
        public static Options defaults() {
            return new Options(2, false, Duration.ofMinutes(5));
        }
    }

    /**
     * What the rank did.
     *
     * @param node the rank's node
     * @param status the publisher's final status, or null if finish failed
     * @param failure the first failure, or null
     * @param batches batches handed over successfully
     * @param bytes bytes handed over successfully
     * @param firstHandOverNanos {@link System#nanoTime()} when the first batch was handed over
     */
    public record Result(
            String node,
            PublishStatus status,
            String failure,
            int batches,
            long bytes,
            long firstHandOverNanos) {
        public boolean ok() {
            return failure == null;
        }
    }

    private record Part(int tensorIndex, TensorSpec tensor, long tensorOffset, long bytes) {}

    private record Staged(Reservation reservation, List<StagedTensor> tensors, long bytes) {}

    private final Runnable afterStaging;

    public RankPublisher(PublisherClient publisher, String node, Options options) {
        this(publisher, node, options, () -> {});
    }

    /**
     * @param afterStaging with {@link Options#stageAll}, runs once every batch is written and
     *     before the first is handed over (ranks use it as a barrier so the hand-over phase of one
     *     rank does not overlap the writing of another)
     */
    public RankPublisher(
            PublisherClient publisher, String node, Options options, Runnable afterStaging) {
        this.publisher = publisher;
        this.node = node;
        this.options = options;
        this.afterStaging = afterStaging;
    }

    /** Publishes this rank's share of {@code generation}. */
    public Result publish(
            SourceManifest manifest,
            long generation,
            Map<String, String> nodeOfTensor,
            TensorSource source) {
        Run run = new Run(new GenerationId(manifest.model(), generation));
        List<TensorSpec> tensors = manifest.tensors();
        // Block-FP8 scale tensors are computed by the publisher: no rank has them to write or skip.
        Map<String, Integer> computed = BlockScales.weightOfScale(tensors);
        long maxBatch = 0;
        Map<String, List<StoredFragment>> fragments = new HashMap<>();
        long remaining = 0;
        try {
            publisher.open(run.id);
            maxBatch = publisher.stagingInfo().getMaxBatchBytes();
            for (StoredFragment f : manifest.fragments()) {
                fragments.computeIfAbsent(f.tensor(), k -> new ArrayList<>()).add(f);
            }
            for (int i = 0; i < tensors.size(); i++) {
                TensorSpec t = tensors.get(i);
                if (node.equals(nodeOfTensor.get(t.name())) && !computed.containsKey(t.name())) {
                    for (Part p : parts(i, t, fragments.get(t.name()), maxBatch)) {
                        remaining += align(p.bytes());
                    }
                }
            }
        } catch (RuntimeException e) {
            run.fail(e);
        }
        for (int i = 0; i < tensors.size(); i++) {
            TensorSpec tensor = tensors.get(i);
            if (computed.containsKey(tensor.name())) {
                continue;
            }
            if (!node.equals(nodeOfTensor.get(tensor.name())) || run.failure != null) {
                source.skip(i, tensor);
                continue;
            }
            try {
                for (Part part : parts(i, tensor, fragments.get(tensor.name()), maxBatch)) {
                    long aligned = align(part.bytes());
                    if (run.open != null && run.cursor + aligned > run.open.getSize()) {
                        run.close();
                    }
                    if (run.open == null) {
                        run.open =
                                publisher.reserve(
                                        run.id,
                                        Math.max(ALIGN, Math.min(maxBatch, remaining)),
                                        Math.max(ALIGN, aligned),
                                        options.reserveTimeout());
                        run.cursor = 0;
                    }
                    run.write(part, source);
                    remaining -= aligned;
                }
            } catch (RuntimeException e) {
                run.fail(e);
            }
        }
        try {
            run.close();
        } catch (RuntimeException e) {
            run.fail(e);
        }
        if (options.stageAll()) {
            try {
                afterStaging.run();
            } catch (RuntimeException e) {
                run.fail(e);
            }
            for (Staged s : run.stagedAhead) {
                if (run.failure == null) {
                    run.submit(s);
                    run.drain(options.inFlight());
                } else {
                    releaseQuietly(s.reservation());
                }
            }
        }
        run.drain(0);
        run.handOvers.shutdownNow();
        PublishStatus status = null;
        try {
            status = publisher.finish(run.id);
        } catch (RuntimeException e) {
            run.fail(e);
        }
        return new Result(node, status, run.failure, run.batches, run.bytes, run.firstHandOver);
    }

    /** The state of one rank's walk: the open reservation, batches in flight, the first failure. */
    private final class Run {
        final GenerationId id;
        final ExecutorService handOvers =
                Executors.newFixedThreadPool(
                        Math.max(1, options.inFlight()),
                        r -> {
                            Thread t = new Thread(r, "hand-over-" + node);
                            t.setDaemon(true);
                            return t;
                        });
        final Deque<CompletableFuture<PublishBatchResult>> pending = new ArrayDeque<>();
        final List<Staged> stagedAhead = new ArrayList<>();
        final List<StagedTensor> tensors = new ArrayList<>();
        Reservation open;
        long cursor;
        long openBytes;
        String failure;
        int batches;
        long bytes;
        long firstHandOver;

        Run(GenerationId id) {
            this.id = id;
        }

        /** Writes one part into the open reservation right now (the tensor exists only now). */
        void write(Part p, TensorSource source) {
            long at = open.getOffset() + cursor;
            ByteBuffer target = publisher.stagingBytes(at, Math.toIntExact(p.bytes()));
            source.write(p.tensorIndex(), p.tensor(), p.tensorOffset(), target.duplicate());
            StagedTensor t =
                    new StagedTensor()
                            .name(p.tensor().name())
                            .dtype(Dtype.fromValue(p.tensor().trainerDtype().wireName()))
                            .shape(shape(p.tensor()))
                            .stagingOffset(at)
                            .bytes(p.bytes())
                            .tensorOffset(p.tensorOffset());
            // Mandatory: the publisher refuses a part without it (tensor-checksum-required).
            CRC32C crc = new CRC32C();
            crc.update(target);
            t.checksum("crc32c:" + HexFormat.of().toHexDigits((int) crc.getValue()));
            tensors.add(t);
            cursor += align(p.bytes());
            openBytes += p.bytes();
        }

        /** Ends the open batch: hands it over (or keeps it for later with stageAll). */
        void close() {
            if (open == null) {
                return;
            }
            Staged staged = new Staged(open, List.copyOf(tensors), openBytes);
            open = null;
            tensors.clear();
            openBytes = 0;
            if (staged.tensors().isEmpty()) {
                releaseQuietly(staged.reservation());
            } else if (options.stageAll()) {
                stagedAhead.add(staged);
            } else {
                drain(options.inFlight() - 1);
                if (failure != null) {
                    releaseQuietly(staged.reservation());
                    return;
                }
                submit(staged);
            }
        }

        void submit(Staged staged) {
            if (firstHandOver == 0) {
                firstHandOver = System.nanoTime();
            }
            pending.add(
                    CompletableFuture.supplyAsync(
                            () ->
                                    publisher.handOver(
                                            id,
                                            staged.reservation().getReservationId(),
                                            staged.tensors()),
                            handOvers));
        }

        /** Waits until at most {@code keep} hand-overs are pending, recording their results. */
        void drain(int keep) {
            while (pending.size() > Math.max(0, keep)) {
                try {
                    PublishBatchResult r = pending.poll().join();
                    batches++;
                    bytes += r.getBytesStaged();
                } catch (CompletionException e) {
                    fail(e.getCause() == null ? e : e.getCause());
                }
            }
        }

        /** Records the first failure; the open reservation goes back unused. */
        void fail(Throwable e) {
            if (failure == null) {
                failure = Objects.requireNonNullElse(e.getMessage(), e.toString());
            }
            if (open != null) {
                releaseQuietly(open);
                open = null;
                tensors.clear();
                openBytes = 0;
            }
        }
    }

    private void releaseQuietly(Reservation reservation) {
        try {
            publisher.release(reservation.getReservationId());
        } catch (RuntimeException ignored) {
            // reclaimed by the publisher after its reservation timeout
        }
    }

    /** A tensor as parts of at most {@code maxBatch} bytes, cut on fragment boundaries. */
    private static List<Part> parts(
            int index, TensorSpec tensor, List<StoredFragment> fragments, long maxBatch) {
        int trainerWidth = tensor.trainerDtype().bytes();
        int rolloutWidth = tensor.rolloutDtype().bytes();
        long total = tensor.shape().numel() * trainerWidth;
        if (total <= maxBatch || fragments == null) {
            return List.of(new Part(index, tensor, 0, total));
        }
        List<StoredFragment> ordered = new ArrayList<>(fragments);
        ordered.sort((a, b) -> Long.compare(a.offset().dim(0), b.offset().dim(0)));
        List<Part> parts = new ArrayList<>();
        long start = 0;
        long size = 0;
        for (StoredFragment f : ordered) {
            long bytes = f.bytes() / rolloutWidth * trainerWidth;
            if (bytes > maxBatch) {
                throw new IllegalStateException(
                        "fragment "
                                + f.fragment()
                                + " ("
                                + bytes
                                + " staged bytes) exceeds the publisher's batch bound "
                                + maxBatch
                                + "; lower maxFragmentBytes or raise relay.staging.max-batch-bytes");
            }
            if (size > 0 && size + bytes > maxBatch) {
                parts.add(new Part(index, tensor, start, size));
                start += size;
                size = 0;
            }
            size += bytes;
        }
        parts.add(new Part(index, tensor, start, size));
        return parts;
    }

    private static List<Long> shape(TensorSpec tensor) {
        List<Long> shape = new ArrayList<>(tensor.shape().rank());
        for (long d : tensor.shape().dims()) {
            shape.add(d);
        }
        return shape;
    }

    private static long align(long bytes) {
        return (bytes + ALIGN - 1) / ALIGN * ALIGN;
    }
}
