package io.weightrelay.publisher.publish;

import io.weightrelay.api.StoredObject;
import io.weightrelay.api.publisher.model.PublishBatchRequest;
import io.weightrelay.api.publisher.model.PublishBatchResult;
import io.weightrelay.api.publisher.model.PublishStatus;
import io.weightrelay.api.publisher.model.StagedTensor;
import io.weightrelay.publisher.convert.Conversion;
import io.weightrelay.publisher.segment.SegmentOwner;
import io.weightrelay.publisher.staging.StagingArea;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.service.concurrent.DaemonThreads;
import io.weightrelay.service.problem.RelayException;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns staged batches into stored, registered objects of an open generation.
 *
 * <p>One batch: claim the reservation; lay the staged tensors (or tensor parts) out onto the
 * manifest's fragments ({@link BatchLayout}); convert each fragment in place in staging and
 * checksum it in the same pass, in parallel over fragments, and check each part against the rank's
 * checksum ({@link BatchConverter}); store the fragments (staging in the segment: published where
 * the rank wrote them, one directory call for the batch, no copy; file staging: one put each into
 * the own segment; {@link BatchStore}); register them with control-api in chunks sent in parallel
 * ({@link BatchRegistration}); free the reservation. Any failure after the batch is accepted fails
 * this node's part of the generation and removes everything it stored for it.
 *
 * <p>Thread safe: ranks may hand over batches of the same generation concurrently.
 */
public final class Publisher implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Publisher.class);

    private final StagingArea staging;
    private final SegmentOwner owner;
    private final PublishMetrics metrics;
    private final GenerationStates generations;
    private final BatchConverter converter;
    private final BatchStore store;
    private final BatchRegistration registration;
    private final RetiredGenerations retired;

    public Publisher(
            StagingArea staging,
            SegmentOwner owner,
            ControlPlane control,
            PublishMetrics metrics,
            PublishProperties properties) {
        this.staging = staging;
        this.owner = owner;
        this.metrics = metrics;
        this.generations = new GenerationStates(control, properties.keepGenerations());
        this.converter = new BatchConverter(staging, properties.workerThreads());
        this.store = new BatchStore(staging, owner, properties.storeThreads());
        this.registration =
                new BatchRegistration(control, owner.node(), properties.registerChunk());
        this.retired =
                new RetiredGenerations(
                        control,
                        System::nanoTime,
                        nanos -> Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000)));
    }

    /** A pool of daemon threads named {@code name1}, {@code name2}, ... */
    static ExecutorService pool(String name, int threads) {
        return Executors.newFixedThreadPool(threads, DaemonThreads.numbered(name));
    }

    /** Converts, stores and registers one staged batch; the reservation is freed in every case. */
    public PublishBatchResult publishBatch(GenerationId generation, PublishBatchRequest request) {
        StagingArea.Reservation reservation = staging.claim(request.getReservationId());
        try {
            GenerationState gen = generations.load(generation);
            BatchLayout batch = BatchLayout.of(gen.layout(), reservation, request.getTensors());
            gen.begin(batch.keys());
            try {
                return publish(gen, reservation, batch, request.getTensors());
            } catch (RuntimeException e) {
                // The problem's slug leads the reason: later calls answer generation-failed with
                // it.
                String reason =
                        e instanceof RelayException r
                                ? r.kind().slug() + ": " + describe(e)
                                : describe(e);
                List<String> stored = gen.fail(reason);
                log.warn(
                        "generation {} failed on node {}: {}; removing {} stored object(s)",
                        generation.path(),
                        owner.node(),
                        reason,
                        stored.size());
                store.remove(stored);
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
            BatchLayout batch,
            List<StagedTensor> tensors) {
        GenerationLayout layout = gen.layout();
        long t0 = System.nanoTime();
        long outputBlock;
        try {
            outputBlock = store.reserveOutput(batch, layout.generation());
        } catch (RelayException full) {
            if (!retired.collect(layout.model())) {
                throw full;
            }
            outputBlock = store.reserveOutput(batch, layout.generation());
        }
        if (outputBlock != BatchStore.NO_BLOCK) {
            batch = batch.inOutputBlock(outputBlock);
        }
        List<BatchConverter.Converted> converted;
        BatchStore.Stored stored;
        long t1;
        try {
            converted = converter.convertAndVerify(batch, tensors);
            t1 = System.nanoTime();
            long block = outputBlock;
            outputBlock = BatchStore.NO_BLOCK; // from here the store uses it up, whatever happens
            stored = store.store(reservation, converted, block);
        } finally {
            store.releaseOutput(outputBlock);
        }
        if (!gen.stored(stored.keys())) {
            store.remove(stored.keys());
            gen.requireOpen();
        }
        long t2 = System.nanoTime();
        List<StoredObject> objects = store.placed(converted, stored);
        registration.register(layout, objects);
        long t3 = System.nanoTime();
        log.debug(
                "{}/{}: {} objects converted and checked in {} ms, stored in {} ms, registered in"
                        + " {} ms",
                layout.model(),
                layout.generation(),
                batch.works().size(),
                (t1 - t0) / 1_000_000,
                (t2 - t1) / 1_000_000,
                (t3 - t2) / 1_000_000);

        GenerationState.BatchTotals totals = totals(tensors, converted, objects);
        gen.counted(totals);
        metrics.batch(layout.model(), totals);
        return new PublishBatchResult(
                        tensors.size(),
                        objects.size(),
                        totals.bytesStaged(),
                        totals.bytesStoredLocal() + totals.bytesStoredRemote())
                .bytesStoredRemote(totals.bytesStoredRemote());
    }

    /** The batch's byte counters: staged, written by conversions, stored here and elsewhere. */
    private GenerationState.BatchTotals totals(
            List<StagedTensor> tensors,
            List<BatchConverter.Converted> converted,
            List<StoredObject> objects) {
        long staged = 0;
        for (StagedTensor t : tensors) {
            staged += t.getBytes();
        }
        long convertedBytes = 0;
        for (BatchConverter.Converted c : converted) {
            if (c.work().conversion() != Conversion.PASS_THROUGH) {
                convertedBytes += c.result().outputBytes();
                if (c.work().scales() != null) {
                    convertedBytes += c.work().scales().bytes();
                }
            }
        }
        long local = 0;
        long remote = 0;
        for (StoredObject o : objects) {
            if (o.segment().equals(owner.segmentName())) {
                local += o.size();
            } else {
                remote += o.size();
            }
        }
        return new GenerationState.BatchTotals(
                tensors.size(), objects.size(), staged, convertedBytes, local, remote);
    }

    /** Loads the generation's layout ahead of its first batch; idempotent. */
    public PublishStatus open(GenerationId generation) {
        return generations.load(generation).status();
    }

    /** Finishes this node's part of the generation (a node without tensors finishes empty). */
    public PublishStatus finish(GenerationId generation) {
        return generations.load(generation).finish();
    }

    /**
     * Refuses with {@code generation-failed} when this node's part of the generation has failed; a
     * generation this publisher has no state for passes (its first batch loads it).
     */
    public void requireNotFailed(GenerationId generation) {
        generations
                .find(generation)
                .filter(GenerationState::isFailed)
                .ifPresent(GenerationState::requireOpen);
    }

    public PublishStatus status(GenerationId generation) {
        return generations
                .find(generation)
                .orElseThrow(
                        () ->
                                PublishProblems.GENERATION_NOT_FOUND.exception(
                                        "this publisher has no state for "
                                                + generation.model()
                                                + "/"
                                                + generation.generation()))
                .status();
    }

    /**
     * Asks control-api to collect {@code model}'s retired generations that no lease holds, when
     * this node's segment has no room for the next one (see {@link RetiredGenerations}); at most
     * once a second per model, never throwing.
     *
     * @return whether a generation was collected (room may have come back)
     */
    public boolean collectRetired(String model) {
        return retired.collect(model);
    }

    /** A failure as one line: a problem's detail, else the exception's class and message. */
    static String describe(Throwable e) {
        if (e instanceof RelayException r && r.getBody().getDetail() != null) {
            return r.getBody().getDetail();
        }
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    @Override
    public void close() {
        converter.close();
        store.close();
        registration.close();
    }
}
