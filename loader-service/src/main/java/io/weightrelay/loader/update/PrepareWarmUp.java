package io.weightrelay.loader.update;

import io.weightrelay.loader.LoaderProperties;
import io.weightrelay.loader.pipeline.BufferDirectory;
import io.weightrelay.loader.pipeline.BufferSpec;
import io.weightrelay.loader.pipeline.DataplaneUpdater;
import io.weightrelay.loader.pipeline.PipelineExecutor;
import io.weightrelay.loader.pipeline.PrepareRequest;
import io.weightrelay.loader.pipeline.SliceSchedule;
import io.weightrelay.loader.pipeline.WorkerBuffers;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.Fragmenter;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SafetensorsLayout;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetFragment;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.reshard.placement.Worker;
import io.weightrelay.reshard.plan.Plan;
import io.weightrelay.reshard.plan.Planner;
import io.weightrelay.reshard.plan.Slice;
import io.weightrelay.reshard.topology.Topology;
import io.weightrelay.service.lifecycle.StartupWarmUp;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.stereotype.Component;

/**
 * Runs the part of an update's prepare that touches no memory and asks no peer on a synthetic group
 * at start-up, before readiness (Spring Boot reports ready once the runners returned): the manifest
 * and slice decoded from their encodings, the slice validated against the registration, its
 * schedule built, its object keys, staging and notify names derived; one group per mode. The first
 * update after registration was otherwise also the JIT's first run of that code: its prepare took
 * about 1 s against 0.15 s warm. Nothing is registered, stored or sent; a failure only costs the
 * warm-up.
 */
@Component
class PrepareWarmUp implements ApplicationRunner {

    private static final Logger log = LoggerFactory.getLogger(PrepareWarmUp.class);

    /** A catalog model with experts, so the expert-parallel paths run too. */
    static final String MODEL = "small-moe";

    /** Staging slots the warm-up sizes staging for; the size itself is not used. */
    private static final int SLOTS = 2;

    private final LoaderProperties properties;

    PrepareWarmUp(LoaderProperties properties) {
        this.properties = properties;
    }

    @Override
    public void run(ApplicationArguments args) {
        if (!properties.warmUp()) {
            return;
        }
        StartupWarmUp.run(
                log,
                "prepare",
                PrepareWarmUp::warmUp,
                (scheduled, ms) ->
                        log.info(
                                "prepare warmed up in {} ms (model {}, a synthetic group per mode:"
                                        + " {} slices of {} batches checked and scheduled, nothing"
                                        + " registered)",
                                ms,
                                MODEL,
                                scheduled.slices(),
                                scheduled.batches()));
    }

    /** What a warm-up went through: slices checked and scheduled, their batches in all. */
    record Scheduled(int slices, int batches) {}

    /**
     * Prepares every instance of a synthetic group of each mode as far as {@link
     * DataplaneUpdater#check} goes, then derives what prepare derives from each schedule.
     */
    static Scheduled warmUp() {
        SourceManifest source =
                SourceManifest.decode(
                        Fragmenter.fragment(MODEL, ModelCatalog.tensors(MODEL)).encode());
        Topology topology = Topology.uniform(2, 2, 1, 100);
        int slices = 0;
        int batches = 0;
        for (Mode mode : Mode.values()) {
            TargetPlacement placement =
                    Placements.of(ModelCatalog.layout(MODEL), 2, 4, 2, 1, mode, 1);
            Plan plan = Planner.plan(source, placement, topology);
            BufferDirectory directory = new BufferDirectory(buffers(source, placement));
            for (String instance : placement.instances()) {
                Slice slice = Slice.decode(Slice.of(plan, instance).encode());
                List<Worker> registered =
                        placement.workers().stream()
                                .filter(w -> w.instance().equals(instance))
                                .toList();
                PrepareRequest request =
                        new PrepareRequest(
                                MODEL,
                                1,
                                1,
                                instance,
                                registered.stream().map(Worker::id).toList(),
                                source,
                                slice,
                                directory,
                                registered);
                SliceSchedule schedule = DataplaneUpdater.check(request, null).schedule();
                SliceSchedule.objectKeys(slice, new GenerationId(MODEL, 1));
                PipelineExecutor.stagingBytes(schedule, SLOTS);
                schedule.peerSegments();
                for (SliceSchedule.WriterBatch g : schedule.receivedFrom()) {
                    SliceSchedule.notifyName(MODEL, 1, g.writerInstance(), g.batch());
                }
                slices++;
                batches += schedule.batchCount();
            }
        }
        return new Scheduled(slices, batches);
    }

    /**
     * The buffers engines would register for {@code placement}: a compatibility worker's image of
     * the whole manifest, a parameter-direct worker's named buffers as large as their fragments
     * reach.
     */
    static List<WorkerBuffers> buffers(SourceManifest source, TargetPlacement placement) {
        long image = SafetensorsLayout.of(source).imageBytes();
        List<WorkerBuffers> out = new ArrayList<>();
        for (Worker w : placement.workers()) {
            if (w.mode() == Mode.COMPAT) {
                out.add(
                        new WorkerBuffers(
                                w.id(),
                                List.of(new BufferSpec(Worker.COMPAT_BUFFER, w.segment(), image))));
                continue;
            }
            Map<String, Long> ends = new LinkedHashMap<>();
            for (TargetFragment f : w.fragments()) {
                ends.merge(f.buffer(), Math.max(1, f.bufferEnd()), Math::max);
            }
            out.add(
                    new WorkerBuffers(
                            w.id(),
                            ends.entrySet().stream()
                                    .map(e -> new BufferSpec(e.getKey(), w.segment(), e.getValue()))
                                    .toList()));
        }
        return out;
    }
}
