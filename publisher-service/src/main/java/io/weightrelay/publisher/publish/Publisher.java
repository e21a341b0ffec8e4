package io.weightrelay.publisher.publish;

import io.weightrelay.api.publisher.model.PublishBatchRequest;
import io.weightrelay.api.publisher.model.PublishBatchResult;
import io.weightrelay.api.publisher.model.PublishStatus;
import io.weightrelay.api.publisher.model.StagedTensor;
import io.weightrelay.dataplane.Counters;
import io.weightrelay.publisher.convert.Checksums;
import io.weightrelay.publisher.convert.Conversion;
import io.weightrelay.publisher.convert.Converter;
import io.weightrelay.publisher.convert.ElementType;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.service.problem.RelayException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
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
 * parallel over fragments); check the rank's checksums; store each fragment with one put from
 * staging into the own segment (the only copy of the bytes); register the stored objects with
 * control-api in chunks while the rest of the batch is still being stored; free the reservation.
 * Each part (staged tensor) is its own pipeline, so conversion, puts and registrations of different
 * parts overlap. Any failure after the batch is accepted fails this node's part of the generation
 * and removes everything it stored for it.
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

    /** One fragment of a batch: where its input sits in staging and how it is converted. */
    private record Work(
            String key,
            int tensorIndex,
            long stagingOffset,
            int sourceBytes,
            Conversion conversion) {}

    private record Converted(Work work, Converter.Result result) {}

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
            gen.begin(works.stream().map(Work::key).toList());
            try {
                return publish(gen, works, request.getTensors());
            } catch (RuntimeException e) {
                String reason = describe(e);
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
            GenerationState gen, List<Work> works, List<StagedTensor> tensors) {
        GenerationLayout layout = gen.layout();
        ByteBuffer buffer = staging.buffer();
        long t0 = System.nanoTime();
        List<String> storedKeys = Collections.synchronizedList(new ArrayList<>());
        Registration registration = new Registration(layout, owner.counters());
        List<Converted> converted;
        try {
            converted = convertVerifyStore(buffer, works, tensors, storedKeys, registration);
        } catch (RuntimeException e) {
            registration.abandon();
            storedKeys.forEach(owner::remove);
            if (e instanceof RelayException) {
                throw e;
            }
            throw PublishProblems.STORE_FAILED.exception(
                    "storing batch failed: " + describe(e) + "; nothing of it stays stored", e);
        }
        long t1 = System.nanoTime();
        if (!gen.stored(List.copyOf(storedKeys))) {
            registration.abandon();
            storedKeys.forEach(owner::remove);
            gen.requireOpen();
        }
        List<ControlPlane.StoredObject> objects = registration.finish();
        long t2 = System.nanoTime();
        log.debug(
                "{}/{}: {} objects converted, checked and stored in {} ms, last registration {} ms",
                layout.model(),
                layout.generation(),
                works.size(),
                (t1 - t0) / 1_000_000,
                (t2 - t1) / 1_000_000);

        long staged = 0;
        for (StagedTensor t : tensors) {
            staged += t.getBytes();
        }
        long convertedBytes = 0;
        for (Converted c : converted) {
            if (c.work().conversion() != Conversion.PASS_THROUGH) {
                convertedBytes += c.result().outputBytes();
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
                        tensors.size(), works.size(), staged, convertedBytes, local, remote);
        gen.counted(totals);
        metrics.batch(layout.model(), totals);
        return new PublishBatchResult(tensors.size(), works.size(), staged, local + remote)
                .bytesStoredRemote(remote);
    }

    /**
     * Registers a batch's objects with control-api in chunks of {@code registerChunk} while the
     * rest of the batch is still being stored, so the registration round trips overlap the puts;
     * {@link #finish} sends the remainder and waits for every chunk. Thread safe.
     */
    private final class Registration {
        private final GenerationLayout layout;
        private final Counters before;
        private final List<Converted> pending = new ArrayList<>();
        private final List<ControlPlane.StoredObject> all = new ArrayList<>();
        private final List<CompletableFuture<Void>> sent = new ArrayList<>();

        Registration(GenerationLayout layout, Counters before) {
            this.layout = layout;
            this.before = before;
        }

        /** An object of the batch is stored (or empty): register it with the next chunk. */
        synchronized void add(Converted c) {
            pending.add(c);
            if (pending.size() >= registerChunk) {
                send();
            }
        }

        private void send() {
            List<ControlPlane.StoredObject> chunk = placed(List.copyOf(pending), before);
            pending.clear();
            all.addAll(chunk);
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

        /** Sends the remainder and waits; the first refusal is rethrown. */
        List<ControlPlane.StoredObject> finish() {
            List<CompletableFuture<Void>> all;
            synchronized (this) {
                if (!pending.isEmpty()) {
                    send();
                }
                all = List.copyOf(sent);
            }
            RuntimeException first = null;
            for (CompletableFuture<Void> f : all) {
                try {
                    f.join();
                } catch (CompletionException e) {
                    if (first == null) {
                        first = unwrap(e);
                    }
                }
            }
            if (first != null) {
                throw first;
            }
            synchronized (this) {
                return List.copyOf(this.all);
            }
        }

        /** Waits for chunks already sent (their objects go with the generation's abort). */
        void abandon() {
            List<CompletableFuture<Void>> all;
            synchronized (this) {
                pending.clear();
                all = List.copyOf(sent);
            }
            for (CompletableFuture<Void> f : all) {
                try {
                    f.join();
                } catch (CompletionException ignored) {
                    // the batch fails anyway
                }
            }
        }
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
            String segment = owner.segmentName();
            if (!allLocal && c.result().outputBytes() > 0) {
                segment = owner.segmentOf(c.work().key()).orElse(segment);
            }
            objects.add(
                    new ControlPlane.StoredObject(
                            c.work().key(),
                            c.result().outputBytes(),
                            Checksums.format(c.result().outputCrc()),
                            segment));
        }
        return objects;
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
            ElementType type = ElementType.ofApiName(staged.getDtype().getValue());
            if (type != tensor.trainerType() || !tensor.shape().equals(staged.getShape())) {
                throw mismatch(
                        "tensor '"
                                + tensor.name()
                                + "' is "
                                + tensor.trainerType().apiName()
                                + tensor.shape()
                                + " in the manifest, the batch says "
                                + type.apiName()
                                + staged.getShape());
            }
            Conversion conversion =
                    Conversion.between(tensor.trainerType(), tensor.rolloutType())
                            .orElseThrow(
                                    () ->
                                            PublishProblems.UNSUPPORTED_CONVERSION.exception(
                                                    "no conversion from "
                                                            + tensor.trainerType().apiName()
                                                            + " to "
                                                            + tensor.rolloutType().apiName()
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
                works.add(
                        new Work(
                                f.key(),
                                i,
                                staged.getStagingOffset() + (f.firstElement() - first) * width,
                                Math.toIntExact(f.elements() * width),
                                conversion));
                expect = fEnd;
            }
            if (expect != end) {
                throw mismatch("tensor '" + tensor.name() + "': fragments do not cover the part");
            }
        }
        return works;
    }

    /**
     * Each staged tensor (or part) as its own pipeline: its fragments are converted in parallel on
     * the CPU workers, its checksum is checked as soon as they are, and its puts start right away
     * on the store threads, so conversion of one part overlaps the store waits of another.
     *
     * @return the converted fragments in batch order
     */
    private List<Converted> convertVerifyStore(
            ByteBuffer buffer,
            List<Work> works,
            List<StagedTensor> tensors,
            List<String> stored,
            Registration registration) {
        Map<Integer, List<Work>> byPart = new LinkedHashMap<>();
        for (Work w : works) {
            byPart.computeIfAbsent(w.tensorIndex(), k -> new ArrayList<>()).add(w);
        }
        List<CompletableFuture<List<Converted>>> parts = new ArrayList<>(byPart.size());
        for (List<Work> part : byPart.values()) {
            List<CompletableFuture<Converted>> conversions = new ArrayList<>(part.size());
            for (Work w : part) {
                conversions.add(
                        CompletableFuture.supplyAsync(
                                () ->
                                        new Converted(
                                                w,
                                                Converter.convertInPlace(
                                                        buffer,
                                                        Math.toIntExact(w.stagingOffset()),
                                                        w.sourceBytes(),
                                                        w.conversion())),
                                workers));
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
                                    })
                            .thenCompose(list -> storeAll(list, stored, registration)));
        }
        List<Converted> out = new ArrayList<>(works.size());
        RuntimeException first = null;
        for (CompletableFuture<List<Converted>> part : parts) {
            try {
                out.addAll(part.join());
            } catch (CompletionException e) {
                if (first == null) {
                    first = unwrap(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
        return out;
    }

    private CompletableFuture<List<Converted>> storeAll(
            List<Converted> list, List<String> stored, Registration registration) {
        List<CompletableFuture<Void>> puts = new ArrayList<>(list.size());
        for (Converted c : list) {
            if (c.result().outputBytes() == 0) {
                registration.add(c);
                continue;
            }
            puts.add(
                    CompletableFuture.runAsync(
                            () -> {
                                owner.putFromStaging(
                                        c.work().key(),
                                        c.work().stagingOffset(),
                                        c.result().outputBytes());
                                stored.add(c.work().key());
                                registration.add(c);
                            },
                            stores));
        }
        return CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new))
                .thenApply(done -> list);
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

    private static RuntimeException unwrap(Throwable e) {
        Throwable cause = e;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause instanceof RuntimeException r ? r : new IllegalStateException(cause);
    }

    /** Loads the generation's layout ahead of its first batch; idempotent. */
    public PublishStatus open(String model, long generation) {
        return state(model, generation).status();
    }

    /** Finishes this node's part of the generation (a node without tensors finishes empty). */
    public PublishStatus finish(String model, long generation) {
        return state(model, generation).finish();
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
