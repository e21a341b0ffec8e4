package io.weightrelay.lab.rollout;

import io.weightrelay.api.ControlManifests;
import io.weightrelay.api.Endpoint;
import io.weightrelay.api.RelayClients;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.loader.client.model.InstanceStatus;
import io.weightrelay.api.loader.client.model.UpdateOutcome;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.catalog.Placements;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.placement.Mode;
import io.weightrelay.reshard.placement.TargetPlacement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * {@code ./relay rollout}: one simulated engine per loader-service (instance {@code i} talks to the
 * {@code i}-th loader; instances are packed onto the rollout nodes in order, like {@link
 * Placements}). Each engine registers its workers and buffers, then, per update, "drains", asks its
 * loader to update (to the given generation or the active one), follows the progress, and checks
 * every byte it received. Prints one JSON line per engine and update; exits 1 if any update did not
 * end {@code UPDATED} with every byte correct.
 */
public final class SimulatedRollout {
    private SimulatedRollout() {}

    /**
     * What {@code ./relay rollout}'s flags say, defaults applied there.
     *
     * @param loaders one loader-service URL per instance
     * @param generation the generation to update to; null for the active one
     * @param updates updates per engine
     */
    public record Options(
            String model,
            int instances,
            int tp,
            int rolloutNodes,
            Mode mode,
            List<String> loaders,
            String controlUrl,
            String token,
            String group,
            Long generation,
            int updates,
            long seed) {

        /** The engines' workers, instances packed onto the rollout nodes in order. */
        TargetPlacement placement() {
            return Placements.of(
                    ModelCatalog.layout(model), rolloutNodes, instances, tp, 1, mode, 1);
        }
    }

    public static void run(Options options) throws Exception {
        String model = options.model();
        GenerationsApi control = controlClient(options.controlUrl(), options.token());
        TargetPlacement placement = options.placement();
        List<String> ids = placement.instances();
        long active = control.getActiveGeneration(model).getGeneration();
        SourceManifest manifest =
                manifest(
                        control,
                        model,
                        options.generation() != null ? options.generation() : active);
        List<RolloutEngine> engines = new ArrayList<>();
        for (int i = 0; i < ids.size(); i++) {
            RolloutEngine engine =
                    new RolloutEngine(ids.get(i), options.loaders().get(i), options.token());
            String node =
                    placement.workers().stream()
                            .filter(w -> w.instance().equals(engine.instance()))
                            .findFirst()
                            .orElseThrow()
                            .node();
            engine.register(
                    model,
                    options.group(),
                    node,
                    RolloutEngine.workers(placement, engine.instance(), manifest));
            engines.add(engine);
        }
        boolean ok = true;
        ExecutorService pool = Executors.newFixedThreadPool(engines.size());
        try {
            for (int u = 0; u < options.updates(); u++) {
                List<Future<String>> results = new ArrayList<>();
                for (RolloutEngine engine : engines) {
                    results.add(
                            pool.submit(
                                    () ->
                                            updateAndVerify(
                                                    engine,
                                                    options.generation(),
                                                    manifest,
                                                    options.seed())));
                }
                for (Future<String> r : results) {
                    String line = r.get();
                    ok &= line.contains("\"verified\":true");
                    System.out.println(line);
                }
            }
        } finally {
            pool.shutdownNow();
        }
        if (!ok) {
            System.exit(1);
        }
    }

    static GenerationsApi controlClient(String url, String token) {
        return new GenerationsApi(RelayClients.of(Endpoint.of(url, token)).control());
    }

    /** The generation's manifest, as control-api serves it. */
    static SourceManifest manifest(GenerationsApi control, String model, long generation) {
        return ControlManifests.toReshard(control.getGenerationManifest(model, generation));
    }

    /** One engine's update: drain (nothing in flight here), update, check every byte. */
    static String updateAndVerify(
            RolloutEngine engine, Long generation, SourceManifest manifest, long seed)
            throws InterruptedException {
        long started = System.nanoTime();
        UpdateProgress start = engine.start(generation, Duration.ofMinutes(10));
        UpdateProgress end = engine.await(start.getUpdateId(), Duration.ofMillis(50));
        double seconds = (System.nanoTime() - started) / 1e9;
        long verified = 0;
        String problem = null;
        if (end.getOutcome() == UpdateOutcome.UPDATED) {
            InstanceStatus status = engine.status();
            try {
                verified = new ShmVerifier(manifest, seed, end.getGeneration()).verify(status);
            } catch (AssertionError | RuntimeException e) {
                problem = e.getMessage();
            }
        } else {
            problem = end.getError();
        }
        return String.format(
                Locale.ROOT,
                "{\"instance\":\"%s\",\"generation\":%d,\"outcome\":\"%s\",\"update_s\":%.3f,"
                        + "\"bytes_read\":%d,\"bytes_received\":%d,\"bytes_verified\":%d,"
                        + "\"verified\":%s%s}",
                engine.instance(),
                end.getGeneration(),
                end.getOutcome(),
                seconds,
                nz(end.getBytesRead()),
                nz(end.getBytesReceived()),
                verified,
                problem == null && end.getOutcome() == UpdateOutcome.UPDATED,
                problem == null
                        ? ""
                        : ",\"failing_peer\":\""
                                + String.valueOf(end.getFailingPeer())
                                + "\",\"error\":\""
                                + problem.replace("\\", "\\\\").replace("\"", "'")
                                + "\"");
    }

    private static long nz(Long value) {
        return value == null ? 0 : value;
    }
}
