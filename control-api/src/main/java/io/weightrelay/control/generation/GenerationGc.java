package io.weightrelay.control.generation;

import io.micrometer.core.instrument.MeterRegistry;
import io.weightrelay.api.control.model.GcReport;
import io.weightrelay.control.redis.ScriptCall.Reply;
import io.weightrelay.control.registry.ControlPlaneTicks;
import io.weightrelay.reshard.manifest.GenerationId;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * Garbage collection of a model's retired and aborted generations that no lease holds: their store
 * objects first, then their records, so nothing is ever left pointing at removed bytes. A lease
 * that lapsed while no control-api instance served (its holder could not renew it) still holds for
 * one registration TTL after control-api is back ({@link ControlPlaneTicks#leaseFloor}).
 */
@Service
public class GenerationGc {

    private static final Logger log = LoggerFactory.getLogger(GenerationGc.class);

    private final GenerationScripts scripts;
    private final GenerationQueries generations;
    private final ManifestStore manifests;
    private final MeterRegistry meters;
    private final ControlPlaneTicks ticks;

    GenerationGc(
            GenerationScripts scripts,
            GenerationQueries generations,
            ManifestStore manifests,
            MeterRegistry meters,
            ControlPlaneTicks ticks) {
        this.scripts = scripts;
        this.generations = generations;
        this.manifests = manifests;
        this.meters = meters;
        this.ticks = ticks;
    }

    public GcReport collectGarbage(String model) {
        generations.requireModel(model);
        // Which leases have expired, gc-mark.lua judges on the Redis server's clock; one that
        // lapsed during a control-plane outage still holds until its holder could renew it.
        Reply result =
                scripts.run("gc-mark", model, String.valueOf(ticks.leaseFloor().toEpochMilli()));
        int n = (int) result.number(1);
        List<Long> collected = new ArrayList<>();
        List<Long> kept = new ArrayList<>();
        for (int i = 2; i < result.size(); i++) {
            (i < 2 + n ? collected : kept).add(result.number(i));
        }
        long removed = 0;
        List<Long> done = new ArrayList<>();
        for (long generation : collected) {
            GenerationId id = new GenerationId(model, generation);
            Optional<StoredGeneration> g = generations.find(id);
            if (g.isEmpty()) {
                continue;
            }
            removed += manifests.removeObjects(id, g.get().manifestDigest());
            Reply finish = scripts.run("gc-finish", model, String.valueOf(generation));
            if (finish.is("ok")) {
                done.add(generation);
                manifests.forget(
                        id,
                        g.get().manifestDigest(),
                        finish.size() > 1 && "manifest-removed".equals(finish.item(1)));
            }
        }
        if (!done.isEmpty()) {
            meters.counter("relay.generations.collected", "model", model).increment(done.size());
            log.info(
                    "model {}: collected generations {} ({} store objects removed), kept {}",
                    model,
                    done,
                    removed,
                    kept);
        }
        return new GcReport(done, kept, removed);
    }
}
