package io.weightrelay.loader.update;

import io.weightrelay.dataplane.Segment;
import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.instance.DataplaneHolder;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.pipeline.ApplyCounts;
import io.weightrelay.loader.pipeline.ApplyFailure;
import io.weightrelay.loader.pipeline.ApplySettings;
import io.weightrelay.loader.pipeline.BatchHook;
import io.weightrelay.loader.pipeline.BufferDirectory;
import io.weightrelay.loader.pipeline.DataplaneUpdater;
import io.weightrelay.loader.pipeline.FlakyReads;
import io.weightrelay.loader.pipeline.FlippedReceives;
import io.weightrelay.loader.pipeline.LandedFault;
import io.weightrelay.loader.pipeline.PrepareRequest;
import io.weightrelay.loader.pipeline.Prepared;
import io.weightrelay.loader.pipeline.ReadFault;
import io.weightrelay.loader.pipeline.SliceSchedule;
import io.weightrelay.loader.registration.RegistrationKey;
import io.weightrelay.loader.registration.ServingCopies;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.service.concurrent.DaemonThreads;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.LongConsumer;
import org.springframework.stereotype.Component;

/** {@link UpdateSteps} on this process's data plane. */
@Component
class DataplaneUpdateSteps implements UpdateSteps {
    private static final org.slf4j.Logger log =
            org.slf4j.LoggerFactory.getLogger(DataplaneUpdateSteps.class);
    private static final ExecutorService AHEAD =
            Executors.newSingleThreadExecutor(DaemonThreads.named("reads-ahead"));
    private final DataplaneHolder holder;
    private final LoaderProperties properties;

    DataplaneUpdateSteps(DataplaneHolder holder, LoaderProperties properties) {
        this.holder = holder;
        this.properties = properties;
    }

    private DataplaneUpdater updater(String instance) {
        int failAt = properties.failBeforeBatch();
        BatchHook hook =
                failAt < 0
                        ? BatchHook.NONE
                        : batch -> {
                            if (batch == failAt) {
                                throw new ApplyFailure(
                                        instance, "injected failure before batch " + batch);
                            }
                        };
        return new DataplaneUpdater(
                holder.dataplane(),
                holder.registrations(),
                new ApplySettings(
                        properties.stagingSlots(),
                        hook,
                        properties.readThreads(),
                        properties.checksums(),
                        properties.flakyReadsFile().isEmpty()
                                ? ReadFault.NONE
                                : new FlakyReads(Path.of(properties.flakyReadsFile())),
                        properties.flipReceivedFile().isEmpty()
                                ? LandedFault.NONE
                                : new FlippedReceives(Path.of(properties.flipReceivedFile()))));
    }

    /** What a validated slice was validated for. */
    private record SliceKey(
            Slice slice,
            String instance,
            long epoch,
            BufferDirectory directory,
            List<Worker> workers) {

        static SliceKey of(PrepareRequest r) {
            return new SliceKey(r.slice(), r.instance(), r.epoch(), r.directory(), r.registered());
        }

        boolean matches(SliceKey other) {
            return slice == other.slice
                    && instance.equals(other.instance)
                    && epoch == other.epoch
                    && directory.equals(other.directory)
                    && workers.equals(other.workers);
        }
    }

    private SliceKey validatedFor;
    private SliceSchedule validated;

    /** Read checks started beside the prepare call, for one model, generation and slice. */
    private record ReadsAhead(
            GenerationId generation, Slice slice, CompletableFuture<Void> checks) {

        boolean isFor(PrepareRequest r) {
            return slice == r.slice() && generation.equals(r.id());
        }
    }

    private ReadsAhead ahead;

    @Override
    public synchronized void checkReadsAhead(GenerationId generation, Slice slice) {
        ahead =
                new ReadsAhead(
                        generation,
                        slice,
                        CompletableFuture.runAsync(
                                () -> updater(slice.instance()).checkReads(generation, slice),
                                AHEAD));
    }

    /**
     * Whether the read checks started ahead ({@code a}) passed for this request, waiting for them.
     */
    private static boolean readsCheckedAhead(ReadsAhead a, PrepareRequest request) {
        if (a == null) {
            return false;
        }
        try {
            // Also when they were for another slice: no two checks of the data plane at once.
            a.checks().join();
            return a.isFor(request);
        } catch (CompletionException | CancellationException e) {
            // Run again by the prepare, which names what failed as of now.
            return false;
        }
    }

    @Override
    public synchronized PreparedUpdate prepare(PrepareRequest request) {
        DataplaneUpdater updater = updater(request.instance());
        SliceKey key = SliceKey.of(request);
        SliceSchedule reuse = validatedFor != null && validatedFor.matches(key) ? validated : null;
        ReadsAhead checks = ahead;
        ahead = null;
        // Waited for inside the prepare, after its validation, so its laps show the wait.
        Prepared prepared =
                updater.prepare(request, reuse, () -> readsCheckedAhead(checks, request));
        validatedFor = key;
        validated = prepared.slice();
        boolean readAhead = properties.readAhead();
        return new PreparedUpdate() {
            // Set by the update thread, read by the session watch's.
            private volatile DataplaneUpdater.Applying applying;

            @Override
            public long bytesTotal() {
                return prepared.slice().totalBytes();
            }

            @Override
            public void readAhead(Duration timeout, LongConsumer progress) {
                if (readAhead && applying == null) {
                    applying = updater.begin(prepared, timeout, progress);
                    applying.readAhead();
                }
            }

            @Override
            public void abandon() {
                if (applying != null) {
                    applying.abandon();
                }
            }

            @Override
            public void stop(ApplyFailure why) {
                DataplaneUpdater.Applying a = applying;
                if (a != null) {
                    a.stop(why);
                }
            }

            @Override
            public long proveLanded(java.util.Map<String, byte[]> sent) {
                DataplaneUpdater.LandedCheck check = updater.proveLanded(prepared, sent);
                log.info(
                        "landed bytes of {} for generation {} proven: {} bytes in {} ms",
                        request.instance(),
                        request.generation(),
                        check.bytes(),
                        check.nanos() / 1_000_000);
                return check.bytes();
            }

            @Override
            public ApplyCounts apply(Duration timeout, LongConsumer progress) {
                if (applying == null) {
                    applying = updater.begin(prepared, timeout, progress);
                }
                return updater.apply(applying);
            }
        };
    }

    @Override
    public long install(Instance instance) {
        if (!instance.staged()) {
            return 0;
        }
        BufferDirectory directory = new BufferDirectory(instance.buffers());
        long copied = 0;
        for (String worker : instance.directWorkerIds()) {
            for (Map.Entry<String, Long> s : directory.segmentsOf(worker).entrySet()) {
                Segment segment =
                        holder.registrations()
                                .find(
                                        new RegistrationKey(
                                                instance.epoch(),
                                                instance.instanceId(),
                                                worker,
                                                s.getKey(),
                                                s.getValue()));
                if (segment == null) {
                    throw new ApplyFailure(
                            worker, "receive segment " + s.getKey() + " is not registered");
                }
                copied += ServingCopies.install(segment, s.getValue());
            }
        }
        return copied;
    }

    @Override
    public void promote() {
        holder.registrations().promote();
    }

    @Override
    public void discard() {
        holder.registrations().discardProvisional();
    }
}
