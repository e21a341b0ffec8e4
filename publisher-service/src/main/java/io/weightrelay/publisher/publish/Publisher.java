package io.weightrelay.publisher.publish;

import io.weightrelay.api.publisher.model.PublishBatchRequest;
import io.weightrelay.api.publisher.model.PublishBatchResult;
import io.weightrelay.api.publisher.model.PublishStatus;
import io.weightrelay.api.publisher.model.StagedTensor;
import io.weightrelay.dataplane.Counters;
import io.weightrelay.publisher.Futures;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.convert.Conversion;
import io.weightrelay.publisher.convert.Converter;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.reshard.convert.BlockFp8;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.service.problem.RelayException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns staged batches into stored, registered objects of an open generation.
 *
 * <p>One batch: claim the reservation; map every staged tensor (or tensor part) onto the manifest's
 * fragments; convert each fragment in place in staging and checksum it in the same pass (in
 * parallel over fragments); check each part against the rank's checksum; store the fragments
 * (staging in the segment: published where the rank wrote them, one directory call for the batch,
 * no copy; file staging: one put each into the own segment); register them with control-api in
 * chunks sent in parallel; free the reservation. Any failure after the batch is accepted fails this
 * node's part of the generation and removes everything it stored for it.
 *
 * <p>Thread safe: ranks may hand over batches of the same generation concurrently.
 */
public final class Publisher implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Publisher.class);

    private final StagingArea staging;
    private final SegmentOwner owner;
    private final ControlPlane control;
    private final PublishMetrics metrics;
    private final int keepGenerations;
    private final int registerChunk;
    private final ExecutorService workers;
    private final ExecutorService stores;
    private final ExecutorService registrations;
    private final Map<String, GenerationState> generations = new LinkedHashMap<>();

    /**
     * One fragment of a batch: where its input sits in staging, how it is converted and where its
     * output goes (its input's place, or an output block of the segment).
     */
    private record Work(
            String key,
            int tensorIndex,
            long stagingOffset,
            int sourceBytes,
            Conversion conversion,
            long outputOffset,
            Scales scales) {
        boolean inPlace() {
            return outputOffset == stagingOffset;
        }

        int outputBytes() {
            return Math.toIntExact(conversion.outputBytes(sourceBytes));
        }

        /** Output bytes with the scales, each aligned, as an output block holds them. */
        long outputBlockBytes() {
            return StagingArea.align(outputBytes())
                    + (scales == null ? 0 : StagingArea.align(scales.bytes()));
        }

        /** Output (and scales right after it) at {@code offset} of an output block. */
        Work outputAt(long offset) {
            Scales moved =
                    scales == null ? null : scales.at(offset + StagingArea.align(outputBytes()));
            return new Work(
                    key, tensorIndex, stagingOffset, sourceBytes, conversion, offset, moved);
        }
    }

    /**
     * Where the block scales of a block-FP8 fragment go: object {@code key}, {@code bytes} long, at
     * {@code offset} (in place: in the fragment's staged bytes right after its E4M3 output).
     */
    private record Scales(String key, long rows, long cols, int bytes, long offset) {
        Scales at(long where) {
            return new Scales(key, rows, cols, bytes, where);
        }
    }

    private record Converted(Work work, Converter.Result result, int scaleCrc) {}

    public Publisher(
            StagingArea staging,
            SegmentOwner owner,
            ControlPlane control,
            PublishMetrics metrics,
            PublishProperties properties) {
        this.staging = staging;
        this.owner = owner;
        this.control = control;
        this.metrics = metrics;
        this.keepGenerations = properties.keepGenerations();
        this.registerChunk = properties.registerChunk();
        this.workers = pool("publish-convert-", properties.workerThreads());
        this.stores = pool("publish-store-", properties.storeThreads());
        this.registrations = pool("publish-register-", 2);
    }

    private static ExecutorService pool(String name, int threads) {
        AtomicInteger n = new AtomicInteger();
        return Executors.newFixedThreadPool(
                threads,
                r -> {
                    Thread t = new Thread(r, name + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
    }

    /** Converts, stores and registers one staged batch; the reservation is freed in every case. */
    public PublishBatchResult publishBatch(
            String model, long generation, PublishBatchRequest request) {
        StagingArea.Reservation reservation = staging.claim(request.getReservationId());
        try {
            GenerationState gen = state(model, generation);
            List<Work> works = plan(gen.layout(), reservation, request.getTensors());
            List<String> keys = new ArrayList<>();
            for (Work w : works) {
                keys.add(w.key());
                if (w.scales() != null) {
                    keys.add(w.scales().key());
                }
            }
            gen.begin(keys);
            try {
                return publish(gen, reservation, works, request.getTensors());
            } catch (RuntimeException e) {
                // The problem's slug leads the reason: later calls answer generation-failed with
                // it.
                String reason =
                        e instanceof RelayException r
                                ? r.kind().slug() + ": " + describe(e)
                                : describe(e);
                List<String> stored = gen.fail(reason);
                log.warn(
                        "generation {}/{} failed on node {}: {}; removing {} stored object(s)",
                        model,
                        generation,
                        owner.node(),
                        reason,
                        stored.size());
                stored.forEach(owner::remove);
                throw e;
            } finally {
                gen.end();
            }
        } finally {
            staging.free(reservation);
        }
    }

    private PublishBatchResult publish(
            GenerationState gen,
            StagingArea.Reservation reservation,
            List<Work> works,
            List<StagedTensor> tensors) {
        GenerationLayout layout = gen.layout();
        long t0 = System.nanoTime();
        long outputBlock = -1;
        if (staging.convertsIntoOutputBlocks()) {
            long outputBytes = 0;
            for (Work w : works) {
                if (w.conversion() != Conversion.PASS_THROUGH) {
                    outputBytes += w.outputBlockBytes();
                }
            }
            if (outputBytes > 0) {
                outputBlock = reserveOutput(outputBytes);
                List<Work> placed = new ArrayList<>(works.size());
                long at = outputBlock;
                for (Work w : works) {
                    if (w.conversion() == Conversion.PASS_THROUGH) {
                        placed.add(w);
                    } else {
                        placed.add(w.outputAt(at));
                        at += w.outputBlockBytes();
                    }
                }
                works = placed;
            }
        }
        List<StagingArea.Piece> inStaging = new ArrayList<>();
        List<StagingArea.Piece> inOutput = new ArrayList<>();
        List<Converted> converted;
        long t1;
        Counters before = owner.counters();
        try {
            converted = convertAndVerify(works, tensors);
            t1 = System.nanoTime();
            for (Converted c : converted) {
                List<StagingArea.Piece> pieces = c.work().inPlace() ? inStaging : inOutput;
                if (c.result().outputBytes() > 0) {
                    pieces.add(
                            new StagingArea.Piece(
                                    c.work().key(),
                                    c.work().outputOffset(),
                                    c.result().outputBytes()));
                }
                Scales scales = c.work().scales();
                if (scales != null && scales.bytes() > 0) {
                    pieces.add(
                            new StagingArea.Piece(scales.key(), scales.offset(), scales.bytes()));
                }
            }
            long block = outputBlock;
            outputBlock = -1; // from here the store uses it up, whatever happens
            store(reservation, inStaging, block, inOutput);
        } finally {
            if (outputBlock >= 0) {
                staging.releaseOutput(outputBlock);
            }
        }
        List<String> storedKeys = new ArrayList<>(inStaging.size() + inOutput.size());
        inStaging.forEach(p -> storedKeys.add(p.key()));
        inOutput.forEach(p -> storedKeys.add(p.key()));
        if (!gen.stored(storedKeys)) {
            storedKeys.forEach(owner::remove);
            gen.requireOpen();
        }
        long t2 = System.nanoTime();
        List<ControlPlane.StoredObject> objects = placed(converted, before);
        register(layout, objects);
        long t3 = System.nanoTime();
        log.debug(
                "{}/{}: {} objects converted and checked in {} ms, stored in {} ms, registered in"
                        + " {} ms",
                layout.model(),
                layout.generation(),
                works.size(),
                (t1 - t0) / 1_000_000,
                (t2 - t1) / 1_000_000,
                (t3 - t2) / 1_000_000);

        long staged = 0;
        for (StagedTensor t : tensors) {
            staged += t.getBytes();
        }
        long convertedBytes = 0;
        for (Converted c : converted) {
            if (c.work().conversion() != Conversion.PASS_THROUGH) {
                convertedBytes += c.result().outputBytes();
                if (c.work().scales() != null) {
                    convertedBytes += c.work().scales().bytes();
                }
            }
        }
        long local = 0;
        long remote = 0;
        for (ControlPlane.StoredObject o : objects) {
            if (o.segment().equals(owner.segmentName())) {
                local += o.size();
            } else {
                remote += o.size();
            }
        }
        GenerationState.BatchTotals totals =
                new GenerationState.BatchTotals(
                        tensors.size(), objects.size(), staged, convertedBytes, local, remote);
        gen.counted(totals);
        metrics.batch(layout.model(), totals);
        return new PublishBatchResult(tensors.size(), objects.size(), staged, local + remote)
                .bytesStoredRemote(remote);
    }

    /** Reserves an output block for the batch's converted bytes; no room is a failed store. */
    private long reserveOutput(long bytes) {
        try {
            return staging.reserveOutput(bytes);
        } catch (RuntimeException e) {
            throw PublishProblems.STORE_FAILED.exception(
                    "no room for the batch's "
                            + bytes
                            + " converted bytes in segment "
                            + owner.segmentName()
                            + ": "
                            + describe(e),
                    e);
        }
    }

    /**
     * Stores the pieces written in staging and those written in the output block (if any); when
     * this throws, none of them stays stored and the output block is used up.
     */
    private void store(
            StagingArea.Reservation reservation,
            List<StagingArea.Piece> inStaging,
            long outputBlock,
            List<StagingArea.Piece> inOutput) {
        try {
            staging.store(reservation, inStaging, stores);
        } catch (RuntimeException e) {
            if (outputBlock >= 0) {
                staging.releaseOutput(outputBlock);
            }
            throw storeFailed(e);
        }
        if (outputBlock < 0) {
            return;
        }
        try {
            staging.storeOutput(outputBlock, inOutput);
        } catch (RuntimeException e) {
            inStaging.forEach(p -> owner.remove(p.key()));
            throw storeFailed(e);
        }
    }

    private static RuntimeException storeFailed(RuntimeException e) {
        if (e instanceof RelayException) {
            return e;
        }
        return PublishProblems.STORE_FAILED.exception(
                "storing batch failed: " + describe(e) + "; nothing of it stays stored", e);
    }

    /**
     * Registers a batch's objects with control-api in chunks of {@code registerChunk}, sent in
     * parallel; waits for all and rethrows the first refusal.
     */
    private void register(GenerationLayout layout, List<ControlPlane.StoredObject> objects) {
        List<CompletableFuture<Void>> sent = new ArrayList<>();
        for (int from = 0; from < objects.size(); from += registerChunk) {
            List<ControlPlane.StoredObject> chunk =
                    objects.subList(from, Math.min(objects.size(), from + registerChunk));
            sent.add(
                    CompletableFuture.runAsync(
                            () ->
                                    control.register(
                                            layout.model(),
                                            layout.generation(),
                                            owner.node(),
                                            chunk),
                            registrations));
        }
        Futures.joinAll(sent);
    }

    /**
     * The registrations of the batch's objects with the segment each landed in. Puts prefer the own
     * segment and go to another node (over tcp) only when it is full, so when this engine wrote no
     * tcp byte while the batch was stored, every object is in the own segment and the directory
     * need not be asked once per object.
     */
    private List<ControlPlane.StoredObject> placed(List<Converted> converted, Counters before) {
        boolean allLocal = owner.counters().tcpWritten() == before.tcpWritten();
        List<ControlPlane.StoredObject> objects = new ArrayList<>(converted.size());
        for (Converted c : converted) {
            objects.add(
                    stored(
                            c.work().key(),
                            c.result().outputBytes(),
                            c.result().outputCrc(),
                            allLocal));
            Scales scales = c.work().scales();
            if (scales != null) {
                objects.add(stored(scales.key(), scales.bytes(), c.scaleCrc(), allLocal));
            }
        }
        return objects;
    }

    private ControlPlane.StoredObject stored(String key, long size, int crc, boolean allLocal) {
        String segment = owner.segmentName();
        if ((!allLocal || !owner.ownsSegment()) && size > 0) {
            segment = owner.segmentOf(key).orElse(segment);
        }
        return new ControlPlane.StoredObject(key, size, Checksums.format(crc), segment);
    }

    /** Maps the staged tensors onto fragments; touches no byte. */
    private static List<Work> plan(
            GenerationLayout layout,
            StagingArea.Reservation reservation,
            List<StagedTensor> tensors) {
        List<Work> works = new ArrayList<>();
        for (int i = 0; i < tensors.size(); i++) {
            StagedTensor staged = tensors.get(i);
            GenerationLayout.Tensor tensor =
                    layout.tensor(staged.getName())
                            .orElseThrow(
                                    () ->
                                            mismatch(
                                                    "tensor '"
                                                            + staged.getName()
                                                            + "' is not in the manifest of "
                                                            + layout.model()
                                                            + "/"
                                                            + layout.generation()));
            if (tensor.scalesOf() != null) {
                throw mismatch(
                        "tensor '"
                                + tensor.name()
                                + "' holds the block-FP8 scales of '"
                                + tensor.scalesOf()
                                + "': the publisher computes it while converting that weight;"
                                + " ranks do not send it");
            }
            DType type = DType.ofWireName(staged.getDtype().getValue());
            if (type != tensor.trainerType() || !tensor.shape().equals(staged.getShape())) {
                throw mismatch(
                        "tensor '"
                                + tensor.name()
                                + "' is "
                                + tensor.trainerType().wireName()
                                + tensor.shape()
                                + " in the manifest, the batch says "
                                + type.wireName()
                                + staged.getShape());
            }
            Conversion conversion =
                    Conversion.between(tensor.trainerType(), tensor.rolloutType())
                            .orElseThrow(
                                    () ->
                                            PublishProblems.UNSUPPORTED_CONVERSION.exception(
                                                    "no conversion from "
                                                            + tensor.trainerType().wireName()
                                                            + " to "
                                                            + tensor.rolloutType().wireName()
                                                            + " (tensor '"
                                                            + tensor.name()
                                                            + "')"));
            int width = type.bytes();
            long tensorOffset = staged.getTensorOffset() == null ? 0 : staged.getTensorOffset();
            long bytes = staged.getBytes();
            if (!reservation.contains(staged.getStagingOffset(), bytes)) {
                throw mismatch(
                        "tensor '"
                                + tensor.name()
                                + "' bytes ["
                                + staged.getStagingOffset()
                                + ", +"
                                + bytes
                                + ") lie outside reservation "
                                + reservation.id());
            }
            if (tensorOffset % width != 0 || bytes % width != 0) {
                throw mismatch("tensor '" + tensor.name() + "': part is not whole elements");
            }
            long first = tensorOffset / width;
            long end = first + bytes / width;
            if (end > tensor.elements()) {
                throw mismatch("tensor '" + tensor.name() + "': part ends after the tensor");
            }
            long expect = first;
            for (GenerationLayout.Fragment f : tensor.fragments()) {
                long fEnd = f.firstElement() + f.elements();
                boolean inside = f.firstElement() >= first && fEnd <= end;
                boolean crosses = f.firstElement() < end && fEnd > first && !inside;
                if (crosses) {
                    throw mismatch(
                            "tensor '"
                                    + tensor.name()
                                    + "': part ["
                                    + first
                                    + ", "
                                    + end
                                    + ") elements cuts fragment "
                                    + f.key()
                                    + "; parts start and end on fragment boundaries");
                }
                if (!inside || (f.elements() == 0 && bytes > 0)) {
                    continue;
                }
                long at = staged.getStagingOffset() + (f.firstElement() - first) * width;
                Scales scales = null;
                if (conversion.blockScaled()) {
                    long cols = tensor.shape().get(1);
                    // In place, the scales follow the E4M3 bytes inside the fragment's own input.
                    scales =
                            new Scales(
                                    f.scaleKey(),
                                    cols == 0 ? 0 : f.elements() / cols,
                                    cols,
                                    Math.toIntExact(f.scaleBytes()),
                                    at + f.elements());
                    if (f.scaleKey() == null) {
                        throw mismatch("fragment " + f.key() + " has no scale object");
                    }
                }
                works.add(
                        new Work(
                                f.key(),
                                i,
                                at,
                                Math.toIntExact(f.elements() * width),
                                conversion,
                                at,
                                scales));
                expect = fEnd;
            }
            if (expect != end) {
                throw mismatch("tensor '" + tensor.name() + "': fragments do not cover the part");
            }
        }
        return works;
    }

    /**
     * Converts and checksums every fragment in place on the CPU workers (in parallel over
     * fragments, each reading its bytes once) and checks each part against its rank's checksum as
     * soon as the part's fragments are done.
     *
     * @return the converted fragments in batch order
     */
    private List<Converted> convertAndVerify(List<Work> works, List<StagedTensor> tensors) {
        Map<Integer, List<Work>> byPart = new LinkedHashMap<>();
        for (Work w : works) {
            byPart.computeIfAbsent(w.tensorIndex(), k -> new ArrayList<>()).add(w);
        }
        List<CompletableFuture<List<Converted>>> parts = new ArrayList<>(byPart.size());
        for (List<Work> part : byPart.values()) {
            List<CompletableFuture<Converted>> conversions = new ArrayList<>(part.size());
            for (Work w : part) {
                conversions.add(CompletableFuture.supplyAsync(() -> convert(w), workers));
            }
            parts.add(
                    CompletableFuture.allOf(conversions.toArray(CompletableFuture[]::new))
                            .thenApply(
                                    done -> {
                                        List<Converted> list =
                                                conversions.stream()
                                                        .map(CompletableFuture::join)
                                                        .toList();
                                        verifyChecksum(
                                                list, tensors.get(part.get(0).tensorIndex()));
                                        return list;
                                    }));
        }
        Futures.joinAll(parts);
        List<Converted> out = new ArrayList<>(works.size());
        for (CompletableFuture<List<Converted>> part : parts) {
            out.addAll(part.join());
        }
        return out;
    }

    private Converted convert(Work w) {
        ByteBuffer source = staging.bytes(w.stagingOffset(), w.sourceBytes());
        ByteBuffer target = w.inPlace() ? source : staging.bytes(w.outputOffset(), w.outputBytes());
        Scales scales = w.scales();
        if (scales == null) {
            return new Converted(w, Converter.convert(source, target, w.conversion()), 0);
        }
        if (w.inPlace() && w.outputBytes() + scales.bytes() > w.sourceBytes()) {
            throw PublishProblems.UNSUPPORTED_CONVERSION.exception(
                    "fragment "
                            + w.key()
                            + " ("
                            + w.sourceBytes()
                            + " staged bytes) has no room for its "
                            + w.outputBytes()
                            + " E4M3 bytes and "
                            + scales.bytes()
                            + " scale bytes in file staging; use segment staging for"
                            + " tensors this small");
        }
        BlockFp8.Result r =
                BlockFp8.convert(
                        source,
                        target,
                        staging.bytes(scales.offset(), scales.bytes()),
                        w.conversion().sourceType(),
                        scales.rows(),
                        scales.cols());
        return new Converted(
                w,
                new Converter.Result(r.sourceCrc(), r.outputCrc(), r.outputBytes()),
                r.scaleCrc());
    }

    /** The rank's checksum covers the part's staged bytes: the fragments' input CRCs combined. */
    private static void verifyChecksum(List<Converted> part, StagedTensor tensor) {
        String expected = tensor.getChecksum();
        if (expected == null || tensor.getBytes() == 0) {
            return;
        }
        int crc = part.get(0).result().sourceCrc();
        for (int i = 1; i < part.size(); i++) {
            Converted c = part.get(i);
            crc = Checksums.combine(crc, c.result().sourceCrc(), c.work().sourceBytes());
        }
        if (Checksums.parse(expected) != crc) {
            throw PublishProblems.CHECKSUM_MISMATCH
                    .exception(
                            "tensor '"
                                    + tensor.getName()
                                    + "': staged bytes have "
                                    + Checksums.format(crc)
                                    + ", the rank computed "
                                    + expected)
                    .with("tensor", tensor.getName());
        }
    }

    /** Loads the generation's layout ahead of its first batch; idempotent. */
    public PublishStatus open(String model, long generation) {
        return state(model, generation).status();
    }

    /** Finishes this node's part of the generation (a node without tensors finishes empty). */
    public PublishStatus finish(String model, long generation) {
        return state(model, generation).finish();
    }

    /**
     * Refuses with {@code generation-failed} when this node's part of the generation has failed; a
     * generation this publisher has no state for passes (its first batch loads it).
     */
    public void requireNotFailed(String model, long generation) {
        GenerationState gen;
        synchronized (generations) {
            gen = generations.get(id(model, generation));
        }
        if (gen != null && gen.isFailed()) {
            gen.requireOpen();
        }
    }

    public PublishStatus status(String model, long generation) {
        GenerationState gen;
        synchronized (generations) {
            gen = generations.get(id(model, generation));
        }
        if (gen == null) {
            throw PublishProblems.GENERATION_NOT_FOUND.exception(
                    "this publisher has no state for " + model + "/" + generation);
        }
        return gen.status();
    }

    private GenerationState state(String model, long generation) {
        String id = id(model, generation);
        synchronized (generations) {
            GenerationState gen = generations.get(id);
            if (gen != null) {
                return gen;
            }
        }
        // Outside the lock: fetching a layout is a control-api call.
        GenerationState fresh = new GenerationState(control.layout(model, generation));
        synchronized (generations) {
            GenerationState gen = generations.putIfAbsent(id, fresh);
            evictSettled();
            return gen == null ? fresh : gen;
        }
    }

    /**
     * Keeps the newest states: settled ones go first; beyond twice the bound, open ones without a
     * batch in flight go too (their trainer never finished them; its abort needs no state here).
     */
    private void evictSettled() {
        int excess = generations.size() - keepGenerations;
        for (Iterator<GenerationState> it = generations.values().iterator();
                excess > 0 && it.hasNext(); ) {
            if (it.next().isSettled()) {
                it.remove();
                excess--;
            }
        }
        excess = generations.size() - 2 * keepGenerations;
        for (Iterator<GenerationState> it = generations.values().iterator();
                excess > 0 && it.hasNext(); ) {
            if (it.next().isIdle()) {
                it.remove();
                excess--;
            }
        }
    }

    private static String id(String model, long generation) {
        return model + "/" + generation;
    }

    private static String describe(Throwable e) {
        if (e instanceof RelayException r && r.getBody().getDetail() != null) {
            return r.getBody().getDetail();
        }
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    private static RelayException mismatch(String detail) {
        return PublishProblems.MANIFEST_MISMATCH.exception(detail);
    }

    @Override
    public void close() {
        workers.shutdownNow();
        stores.shutdownNow();
        registrations.shutdownNow();
    }
}
