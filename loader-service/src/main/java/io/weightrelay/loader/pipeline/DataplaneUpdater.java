package io.weightrelay.loader.pipeline;

import io.weightrelay.dataplane.Counters;
import io.weightrelay.dataplane.Dataplane;
import io.weightrelay.dataplane.DataplaneException;
import io.weightrelay.dataplane.ObjectNotFoundException;
import io.weightrelay.dataplane.PeerGoneException;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.dataplane.TransferRequest;
import io.weightrelay.loader.registration.RegistrationKey;
import io.weightrelay.loader.registration.RegistrationManager;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.plan.SliceValidator;
import io.weightrelay.reshard.plan.ValidationReport;
import io.weightrelay.service.concurrent.DaemonThreads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prepare and apply on the data plane for one loader: validates its slice, checks its objects,
 * registers its receive and staging segments through the {@link RegistrationManager} (or finds them
 * registered with the instance), and runs the {@link PipelineExecutor}. Knows nothing of
 * control-api: barriers are the caller's.
 */
public final class DataplaneUpdater {
    private static final Logger log = LoggerFactory.getLogger(DataplaneUpdater.class);

    /** Opens the peer segments of prepared updates while they wait for the others. */
    private static final ExecutorService OPENER =
            Executors.newSingleThreadExecutor(DaemonThreads.named("peer-opener"));

    /** Prunes the notify counters of failed applies once their peers' pushes have timed out. */
    private static final ScheduledExecutorService PRUNER =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("notify-pruner"));

    /** How long reading back one worker's Transfer Engine buffer may take. */
    private static final Duration READ_BACK_TIMEOUT = Duration.ofMinutes(2);

    private final Dataplane dataplane;
    private final RegistrationManager<Segment> registrations;
    private final ApplySettings settings;

    public DataplaneUpdater(
            Dataplane dataplane,
            RegistrationManager<Segment> registrations,
            ApplySettings settings) {
        this.dataplane = dataplane;
        this.registrations = registrations;
        this.settings = settings;
    }

    public Dataplane dataplane() {
        return dataplane;
    }

    public RegistrationManager<Segment> registrations() {
        return registrations;
    }

    /**
     * Prepare: touches no byte of any buffer. Validation and object checks come first, so a failure
     * there registers nothing; registrations made here stay provisional.
     *
     * @throws ApplyFailure naming the object or worker at fault
     */
    public Prepared prepare(PrepareRequest r) {
        return prepare(r, null);
    }

    /**
     * Like {@link #prepare(PrepareRequest)}, reusing {@code validated} (the schedule an earlier
     * prepare validated and built for the same plan, instance, epoch and buffers) instead of
     * validating again. Objects, fences and registrations are still checked.
     */
    public Prepared prepare(PrepareRequest r, SliceSchedule validated) {
        return prepare(r, validated, () -> false);
    }

    /**
     * Like {@link #prepare(PrepareRequest, SliceSchedule)}; when {@code readsChecked} answers true,
     * {@link #checkReads} already passed for this request's model, generation and slice (beside the
     * calls to control-api), and is not run again. It is asked after validation, which it may wait
     * for, so the wait for checks still running shows in the laps as {@code reads-checked-ahead}.
     */
    public Prepared prepare(
            PrepareRequest r, SliceSchedule validated, BooleanSupplier readsChecked) {
        Laps laps = new Laps();
        Checked checked = check(r, validated);
        SliceSchedule slice = checked.schedule();
        SafetensorsLayout layout = checked.layout();
        Slice plan = r.slice();
        laps.lap(validated == null ? "validate-schedule" : "schedule-reused");
        if (readsChecked.getAsBoolean()) {
            laps.lap("reads-checked-ahead");
        } else {
            laps.lap("reads-not-checked-ahead");
            revalidate();
            laps.lap("revalidate");
            checkObjects(SliceSchedule.objectKeys(plan, r.id()));
            laps.lap("check-objects");
        }
        Map<String, Segment> own = new LinkedHashMap<>();
        for (int w : slice.myWorkers()) {
            String worker = plan.workerId(w);
            r.directory()
                    .segmentsOf(worker)
                    .forEach(
                            (segment, size) ->
                                    own.put(
                                            segment,
                                            registrations.acquire(
                                                    new RegistrationKey(
                                                            r.epoch(),
                                                            r.instance(),
                                                            worker,
                                                            segment,
                                                            size,
                                                            r.directory().foreign(segment)))));
        }
        laps.lap("receive-segments");
        // Created at registration, at its upper bound: found here, grown only when this plan
        // needs more. A loader that reads nothing needs none of it.
        long stagingBytes =
                Math.max(
                        PipelineExecutor.stagingBytes(slice, settings.slots()),
                        ReadStaging.NO_READS_BYTES);
        Segment staging =
                registrations.acquireAtLeast(
                        ReadStaging.key(r.epoch(), r.instance(), stagingBytes));
        laps.lap("staging");
        Map<String, Long> baselines = new HashMap<>();
        for (SliceSchedule.WriterBatch g : slice.receivedFrom()) {
            String name =
                    SliceSchedule.notifyName(
                            r.model(), r.generation(), g.writerInstance(), g.batch());
            // Registered before the all-prepared barrier, so no writer notifies an unknown name.
            baselines.put(name, dataplane.engine().registerNotify(name));
        }
        laps.lap("notify");
        log.info("prepare steps of {} for generation {}: {}", r.instance(), r.generation(), laps);
        // The peers this loader writes into are opened while it waits for the others to prepare
        // (beside the object checks they slowed them down: a same-node peer's mapping populates
        // its pages), so the apply's first transfers find their mappings and connections made.
        SliceSchedule schedule = slice;
        CompletableFuture<Void> peersOpened =
                CompletableFuture.runAsync(() -> openPeers(schedule), OPENER);
        return new Prepared(r, slice, staging, own, baselines, layout, peersOpened);
    }

    /**
     * A slice checked and scheduled: what {@link #check} answers.
     *
     * @param schedule the slice's schedule, every write checked against its destination buffer
     * @param layout the safetensors image of the manifest when a worker of this loader is in
     *     compatibility mode, else null
     */
    public record Checked(SliceSchedule schedule, SafetensorsLayout layout) {}

    /**
     * The part of prepare that reads no memory and asks no peer: the slice checked against the
     * manifest, this loader's registration and the group's buffers, and its schedule built (reusing
     * {@code validated} when not null). {@link PrepareWarmUp} runs it on a synthetic group at
     * start-up, so the first update is not also this code's first run.
     *
     * @throws ApplyFailure naming the instance or worker at fault
     */
    public static Checked check(PrepareRequest r, SliceSchedule validated) {
        Slice plan = r.slice();
        if (!plan.sourceDigest().equals(r.manifest().digest())) {
            throw new ApplyFailure(
                    r.model() + "/" + r.generation(),
                    "plan was computed for another source manifest (" + plan.sourceDigest() + ")");
        }
        if (!plan.instance().equals(r.instance())) {
            throw new ApplyFailure(
                    r.instance(),
                    "control-api served the slice of " + plan.instance() + " to " + r.instance());
        }
        Set<String> planned = new HashSet<>(plan.workers());
        if (!planned.equals(new HashSet<>(r.workers()))) {
            throw new ApplyFailure(
                    r.instance(),
                    "the plan's workers of "
                            + r.instance()
                            + " "
                            + planned
                            + " differ from its registration "
                            + r.workers());
        }
        SafetensorsLayout layout = null;
        for (Worker w : r.registered()) {
            if (w.mode() == Mode.COMPAT) {
                layout = SafetensorsLayout.of(r.manifest());
            }
        }
        SliceSchedule slice = validated;
        if (slice == null) {
            // Checked once: against this loader's own registration (its workers receive exactly
            // the bytes they registered, every read and write inside what it reads), then, as the
            // schedule is built, every write against its destination buffer.
            ValidationReport report = SliceValidator.validate(plan, r.registered(), layout);
            if (!report.valid()) {
                throw new ApplyFailure(
                        r.instance(),
                        "the plan's slice of "
                                + r.instance()
                                + " is not valid: "
                                + String.join("; ", report.problems()));
            }
            slice = new SliceSchedule(plan, r.directory());
        }
        for (int w : slice.myWorkers()) {
            if (plan.workerMode(w) == Mode.COMPAT) {
                if (layout == null) {
                    layout = SafetensorsLayout.of(r.manifest());
                }
                BufferDirectory.Placed image =
                        r.directory().require(plan.workerId(w), Worker.COMPAT_BUFFER);
                if (image.size() < layout.imageBytes()) {
                    throw new ApplyFailure(
                            plan.workerId(w),
                            "buffer '"
                                    + image.bufferId()
                                    + "' of "
                                    + plan.workerId(w)
                                    + " holds "
                                    + image.size()
                                    + " bytes; the safetensors image needs "
                                    + layout.imageBytes());
                }
            }
        }
        return new Checked(slice, layout);
    }

    /**
     * The checks of prepare that depend only on what {@code slice} reads: peers that changed owner
     * are forgotten, then every object it reads of {@code generation} must be in the store with an
     * owner that answers. Touches no buffer and registers nothing.
     *
     * @throws ApplyFailure naming the object or segment at fault
     */
    public void checkReads(GenerationId generation, Slice slice) {
        Laps laps = new Laps();
        revalidate();
        laps.lap("revalidate");
        checkObjects(SliceSchedule.objectKeys(slice, generation));
        laps.lap("check-objects");
        log.info("reads of {} checked for generation {}: {}", slice.instance(), generation, laps);
    }

    /**
     * Peers that restarted since the last update (a publisher, another loader) keep their segment
     * names but not their endpoints or files: what changed is forgotten before anything is read or
     * written, so a restart elsewhere never fails this update half-way.
     */
    private void revalidate() {
        int forgotten = dataplane.engine().revalidate();
        if (forgotten > 0) {
            log.info(
                    "{} segment(s) changed owner since the last update; resolving them afresh",
                    forgotten);
        }
    }

    /**
     * Every object this loader reads is in the store and has an owner that answers now: a dead
     * segment owner fails the prepare, naming the segment, so no instance starts an apply it cannot
     * finish. Entries are read pipelined; each segment's owner is probed once.
     */
    private void checkObjects(Set<String> keys) {
        try {
            dataplane.store().checkReadable(List.copyOf(keys));
        } catch (ObjectNotFoundException e) {
            throw new ApplyFailure(e.key(), "object " + e.key() + " is not in the store", e);
        } catch (PeerGoneException e) {
            throw new ApplyFailure(
                    e.segment(),
                    "the owner of segment "
                            + e.segment()
                            + ", which holds objects this loader reads, does not answer",
                    e);
        } catch (DataplaneException e) {
            throw new ApplyFailure(firstOf(keys), "cannot check objects: " + e.getMessage(), e);
        }
    }

    /**
     * Resolves every peer segment the apply writes into: a same-node peer's file is mapped (its
     * pages populated), another node's owner connected. Best effort: a peer that cannot be opened
     * now is left to the apply, which fails naming it if it still cannot.
     */
    private void openPeers(SliceSchedule slice) {
        for (String segment : slice.peerSegments()) {
            try {
                dataplane.engine().probe(segment);
            } catch (DataplaneException e) {
                log.debug("peer segment {} not opened at prepare: {}", segment, e.toString());
            }
        }
    }

    private static String firstOf(Set<String> keys) {
        return keys.isEmpty() ? "store" : keys.iterator().next();
    }

    /**
     * Apply: writes the safetensors headers of this instance's compat workers, then runs the
     * pipeline. Throws {@link ApplyFailure} naming the peer or object; never retries.
     */
    public ApplyCounts apply(Prepared p, Duration timeout, LongConsumer progress) {
        return apply(begin(p, timeout, progress));
    }

    /**
     * An apply whose store reads may already run: the pipeline, and the data plane's counters
     * before its first read.
     */
    public record Applying(
            Prepared prepared,
            Duration timeout,
            PipelineExecutor executor,
            Counters before,
            Runnable giveUpStaging) {

        /**
         * Starts the store reads ahead of {@link DataplaneUpdater#apply(Applying)}: staging fills
         * while the update waits for the other loaders; no worker buffer is written.
         */
        public void readAhead() {
            executor.readAhead();
        }

        /**
         * Stops the reads started ahead of an apply that will not run, and waits until they ended;
         * a read that does not end in time gives the staging up.
         */
        public void abandon() {
            executor.abandon();
            if (executor.undrained()) {
                giveUpStaging.run();
            }
        }

        /** Whether an abandoned transfer of this apply may still move bytes into its staging. */
        boolean undrained() {
            return executor.undrained();
        }

        /** Stops the apply, running or about to run: it fails with {@code why}. */
        public void stop(ApplyFailure why) {
            executor.stop(why);
        }
    }

    /**
     * The pipeline of {@code p}'s apply, not started; {@code timeout} counts from now, for the
     * reads ahead and the apply together.
     */
    public Applying begin(Prepared p, Duration timeout, LongConsumer progress) {
        Counters before = dataplane.counters();
        PipelineExecutor executor =
                new PipelineExecutor(
                        p, dataplane.engine(), dataplane.store(), settings, timeout, progress);
        return new Applying(p, timeout, executor, before, () -> registrations.discard(p.staging()));
    }

    /** Runs the apply {@link #begin} set up, its reads perhaps already under way. */
    public ApplyCounts apply(Applying a) {
        Prepared p = a.prepared;
        PrepareRequest r = p.request();
        Slice plan = p.slice().plan();
        if (p.layout() != null) {
            byte[] header = p.layout().headerBytes();
            for (int w : p.slice().myWorkers()) {
                if (plan.workerMode(w) != Mode.COMPAT) {
                    continue;
                }
                BufferDirectory.Placed image =
                        r.directory().require(plan.workerId(w), Worker.COMPAT_BUFFER);
                ByteBuffer view =
                        p.ownSegments()
                                .get(image.segment())
                                .byteBuffer(image.base(), header.length);
                view.put(header);
            }
        }
        long waited = System.nanoTime();
        try {
            p.peersOpened().join();
        } catch (java.util.concurrent.CompletionException e) {
            // best effort: the transfers open what is still closed, or fail naming it
            log.warn("opening the peers of {} failed: {}", r.instance(), e.getCause().toString());
        }
        waited = (System.nanoTime() - waited) / 1_000_000;
        if (waited > 0) {
            log.info(
                    "apply of {} waited {} ms for its peers' segments to open",
                    r.instance(),
                    waited);
        }
        ApplyCounts counts;
        try {
            counts = a.executor.run();
        } catch (RuntimeException | Error e) {
            // Peers may still be pushing into this instance's segments with notify: a counter
            // dropped now would fail them with NOT_FOUND instead of letting them finish their part
            // and name this instance. The names go once the apply could no longer be running.
            if (a.undrained()) {
                // a transfer of this apply may still land in its staging: never reuse it
                a.giveUpStaging().run();
            }
            List<String> names = List.copyOf(p.notifyBaselines().keySet());
            PRUNER.schedule(() -> unregister(names), a.timeout.toMillis(), TimeUnit.MILLISECONDS);
            throw e;
        }
        unregister(p.notifyBaselines().keySet());
        return counts.withTransport(dataplane.counters().minus(a.before));
    }

    /**
     * What proving the landed bytes found: how many bytes of this loader's workers' buffers were
     * read, and how long it took.
     */
    public record LandedCheck(long bytes, long nanos) {}

    /**
     * Proves what landed in this loader's workers' buffers against what every sender reported
     * sending into them ({@code sent}: each sender's encoded digests for this instance), once every
     * sender reported SENT: the CRC32C of every received byte as the buffers hold it now, bound to
     * where it lies and summed per (sender, worker, buffer), must equal the senders' sums, taken by
     * their data planes as the bytes left them; and every copy a delegate's loader made between two
     * of this loader's workers must hold what its source holds ({@link LandedProof#prove}), which
     * the source's digest ties to the original writer.
     *
     * @throws ApplyFailure naming the sender, the worker, the buffer and the generation of the
     *     first key that differs (every differing key in its message)
     */
    public LandedCheck proveLanded(Prepared p, Map<String, byte[]> sent) {
        long t0 = System.nanoTime();
        PrepareRequest r = p.request();
        SliceSchedule slice = p.slice();
        readBackForeignBuffers(p);
        // One view per buffer, sliced per run: a direct worker's shard is many short runs, and a
        // view made per run cost a native call each.
        Map<String, Map<String, ByteBuffer>> views = new HashMap<>();
        LandedProof.Bytes bytes =
                (worker, buffer, offset, length) -> {
                    BufferDirectory.Placed placed = r.directory().require(worker, buffer);
                    Segment segment = p.ownSegments().get(placed.segment());
                    if (segment == null || offset < 0 || offset + length > placed.size()) {
                        throw new ApplyFailure(
                                worker,
                                "buffer '"
                                        + buffer
                                        + "' of "
                                        + worker
                                        + " is not this loader's to prove at "
                                        + offset);
                    }
                    if (placed.size() > Integer.MAX_VALUE) {
                        return segment.byteBuffer(placed.base() + offset, Math.toIntExact(length));
                    }
                    ByteBuffer whole =
                            views.computeIfAbsent(worker, w -> new HashMap<>())
                                    .computeIfAbsent(
                                            buffer,
                                            b ->
                                                    segment.byteBuffer(
                                                            placed.base(), (int) placed.size()));
                    return whole.slice((int) offset, (int) length);
                };
        settings.landedFault().beforeProof(slice, bytes);
        Map<LandedProof.Key, LandedProof.Digest> expected = new HashMap<>();
        sent.forEach((sender, encoded) -> expected.putAll(LandedProof.decode(sender, encoded)));
        LandedProof.Landed landed = LandedProof.prove(slice, bytes);
        Set<String> workers = new HashSet<>();
        for (int w : slice.myWorkers()) {
            workers.add(slice.plan().workerId(w));
        }
        List<LandedProof.Mismatch> mismatches =
                LandedProof.compare(expected, landed.digests(), workers);
        if (!mismatches.isEmpty()) {
            throw new ApplyFailure(
                    mismatches.get(0).key().sender(),
                    didNotLand(
                            r, mismatches.stream().map(LandedProof.Mismatch::describe).toList()));
        }
        List<LandedProof.CopyMismatch> copies = landed.copies();
        if (!copies.isEmpty()) {
            throw new ApplyFailure(
                    copies.get(0).copier(),
                    didNotLand(
                            r, copies.stream().map(LandedProof.CopyMismatch::describe).toList()));
        }
        long proven = landed.digests().values().stream().mapToLong(LandedProof.Digest::bytes).sum();
        return new LandedCheck(proven, System.nanoTime() - t0);
    }

    /**
     * Reads every buffer of this loader's workers that lives in the worker's own Transfer Engine
     * into its read-back segment ({@code ReceiveSegmentRegistrar}), with a one-sided read through
     * the data plane like any peer's: the proof then sees the bytes as the worker holds them now.
     *
     * @throws ApplyFailure naming the worker whose buffer could not be read
     */
    private void readBackForeignBuffers(Prepared p) {
        BufferDirectory directory = p.request().directory();
        for (Map.Entry<String, Segment> own : p.ownSegments().entrySet()) {
            if (directory.foreign(own.getKey()) == null) {
                continue;
            }
            Segment readBack = own.getValue();
            try {
                dataplane
                        .engine()
                        .transfer(
                                List.of(
                                        TransferRequest.read(
                                                readBack, 0, own.getKey(), 0, readBack.size())),
                                READ_BACK_TIMEOUT);
            } catch (DataplaneException e) {
                String worker = directory.workerOfSegment(own.getKey());
                throw new ApplyFailure(
                        worker,
                        "cannot read back buffer segment "
                                + own.getKey()
                                + " of "
                                + worker
                                + " from its Transfer Engine to prove what landed: "
                                + e.getMessage(),
                        e);
            }
        }
    }

    private void unregister(java.util.Collection<String> names) {
        for (String name : names) {
            try {
                dataplane.engine().unregisterNotify(name);
            } catch (DataplaneException e) {
                // closed meanwhile: its counters are gone with it
            }
        }
    }

    /** "generation G of M did not land as sent: " and the first eight findings, then a count. */
    private static String didNotLand(PrepareRequest r, List<String> findings) {
        StringBuilder why =
                new StringBuilder("generation ")
                        .append(r.generation())
                        .append(" of ")
                        .append(r.model())
                        .append(" did not land as sent: ");
        int shown = Math.min(findings.size(), 8);
        why.append(String.join("; ", findings.subList(0, shown)));
        if (findings.size() > shown) {
            why.append("; and ").append(findings.size() - shown).append(" more");
        }
        return why.toString();
    }
}
