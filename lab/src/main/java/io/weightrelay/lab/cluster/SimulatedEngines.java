package io.weightrelay.lab.cluster;

import io.weightrelay.api.common.model.UpdatePhase;
import io.weightrelay.api.loader.client.model.DirectInstall;
import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cli.Progress;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.lab.rollout.ShmVerifier;
import io.weightrelay.reshard.manifest.SourceManifest;
import io.weightrelay.reshard.manifest.TensorSpec;
import io.weightrelay.reshard.placement.TargetPlacement;
import io.weightrelay.testkit.sim.DeterministicWeights;
import io.weightrelay.trainer.client.PublisherClient;
import io.weightrelay.trainer.client.RankPublisher;
import io.weightrelay.trainer.client.RestCoordinator;
import io.weightrelay.trainer.client.TensorSource;
import io.weightrelay.trainer.client.TrainerSession;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.UnaryOperator;

/**
 * The simulated trainer and rollout engines that drive a lab's services from this JVM: the trainer
 * publishes deterministic weights through the publishers, each engine registers its workers with
 * its loader and updates through it, and every byte the engines' workers hold is checked against
 * the generation's contents. Not thread safe.
 */
final class SimulatedEngines {

    private final LabCluster.Spec spec;
    private final SourceManifest manifest;
    private final TargetPlacement placement;
    private final List<LabCatalog.LoaderSlot> slots;
    private final LabSecrets secrets;
    private final List<RolloutEngine> engines = new ArrayList<>();
    private TrainerSession trainer;
    private AssignmentRecorder assignments;
    private double registrationSeconds;
    private DirectInstall directInstall = DirectInstall.IN_PLACE;
    private boolean installOnRequest;

    SimulatedEngines(
            LabCluster.Spec spec,
            SourceManifest manifest,
            TargetPlacement placement,
            List<LabCatalog.LoaderSlot> slots,
            LabSecrets secrets) {
        this.spec = spec;
        this.manifest = manifest;
        this.placement = placement;
        this.slots = slots;
        this.secrets = secrets;
    }

    // ---- The trainer ----

    /** The simulated trainer's session, over the publishers at {@code publisherUrls} (by node). */
    void connectTrainer(Map<String, String> publisherUrls, String controlUrls) {
        String token = secrets.trainer();
        Map<String, PublisherClient> clients = new LinkedHashMap<>();
        publisherUrls.forEach(
                (node, url) ->
                        clients.put(
                                node, PublisherClient.connect(url, token, Duration.ofMinutes(5))));
        assignments =
                new AssignmentRecorder(
                        new RestCoordinator(
                                controlUrls,
                                token,
                                Duration.ofMinutes(2),
                                LabCatalog.MAX_FRAGMENT));
        trainer =
                new TrainerSession(
                        assignments,
                        clients,
                        new RankPublisher.Options(2, true, Duration.ofMinutes(2)));
    }

    /**
     * Tensor name to the trainer node whose publisher stored it, for a generation published here.
     */
    Map<String, String> nodeOfTensor(long generation) {
        return assignments.nodeOfTensor(generation);
    }

    /** Publishes the generation of {@code step}, showing its progress; returns its id. */
    long publish(long step) {
        try (Progress progress = Progress.of("publish", manifest.totalBytes())) {
            return trainer.publish(
                            manifest,
                            step,
                            g -> counted(new DeterministicWeights(spec.seed(), g), progress))
                    .generation();
        }
    }

    /** Publishes the generation of {@code step} with its bytes passed through {@code wrap}. */
    long publish(long step, UnaryOperator<TensorSource> wrap) {
        return trainer.publish(
                        manifest, step, g -> wrap.apply(new DeterministicWeights(spec.seed(), g)))
                .generation();
    }

    /**
     * {@code source}, counting into {@code progress} the bytes the trainer's ranks take from it.
     */
    private static TensorSource counted(TensorSource source, Progress progress) {
        return new TensorSource() {
            @Override
            public void write(
                    int tensorIndex, TensorSpec tensor, long tensorOffset, ByteBuffer target) {
                int bytes = target.remaining();
                source.write(tensorIndex, tensor, tensorOffset, target);
                progress.add(bytes);
            }

            @Override
            public void skip(int tensorIndex, TensorSpec tensor) {
                source.skip(tensorIndex, tensor);
            }
        };
    }

    // ---- The rollout engines ----

    List<RolloutEngine> engines() {
        return List.copyOf(engines);
    }

    /** The engines now serving {@code instances}, in that order. */
    List<RolloutEngine> of(List<String> instances) {
        List<RolloutEngine> out = new ArrayList<>();
        for (String id : instances) {
            out.add(
                    engines.stream()
                            .filter(e -> e.instance().equals(id))
                            .findFirst()
                            .orElseThrow(() -> new IllegalArgumentException("no instance " + id)));
        }
        return out;
    }

    RolloutEngine engine(int index) {
        return engines.get(index);
    }

    /** Forgets every engine (their loaders are gone). */
    void clear() {
        engines.clear();
    }

    /**
     * One engine per loader slot, each registered with its loader (at {@code loaderUrls}, in slot
     * order) in the lab's group, one after another, timed as {@link #registrationSeconds()}.
     */
    void registerAll(List<String> loaderUrls) {
        long started = System.nanoTime();
        for (int i = 0; i < slots.size(); i++) {
            String id = slots.get(i).id();
            RolloutEngine engine = new RolloutEngine(id, loaderUrls.get(i), secrets.loader(id));
            register(engine, slots.get(i), "lab");
            engines.add(engine);
        }
        registrationSeconds = (System.nanoTime() - started) / 1e9;
    }

    /** Seconds the engines' first registrations took, one after another. */
    double registrationSeconds() {
        return registrationSeconds;
    }

    /**
     * A fresh engine for slot {@code index}, over the loader at {@code loaderUrl}, registered in
     * {@code group} in place of the old one.
     */
    RolloutEngine replace(int index, String loaderUrl, String group) {
        LabCatalog.LoaderSlot slot = slots.get(index);
        String id = slot.id();
        RolloutEngine engine = new RolloutEngine(id, loaderUrl, secrets.loader(id));
        register(engine, slot, group);
        engines.set(index, engine);
        return engine;
    }

    /**
     * Registers every engine again, its direct workers taking new generations {@code how}: every
     * registration from now on says so.
     */
    void directInstall(DirectInstall how) {
        directInstall = how;
        for (int i = 0; i < engines.size(); i++) {
            reRegister(i);
        }
    }

    /**
     * Whether {@link #update} serves through the fetch: each engine starts its update to install on
     * request, follows it to FETCHED, then drains and asks to install (otherwise it drains first
     * and updates in one call).
     */
    void installOnRequest(boolean on) {
        installOnRequest = on;
    }

    /** Registers engine {@code index} again with its own loader, in the lab's group. */
    void reRegister(int index) {
        register(engines.get(index), slots.get(index), "lab");
    }

    /**
     * Registers {@code engine} (the engine side of {@code slot}) with its loader in {@code group}.
     */
    private void register(RolloutEngine engine, LabCatalog.LoaderSlot slot, String group) {
        engine.register(
                spec.model(),
                group,
                slot.node(),
                slot.span(),
                RolloutEngine.workers(placement, slot.rolloutInstance(), slot.node(), manifest),
                directInstall);
    }

    /** Updates the given engines together, showing the sum of their progress. */
    LabUpdate update(List<RolloutEngine> which) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(which.size());
        // Each engine's last answer; the progress shown is their sum.
        Map<String, UpdateProgress> latest = new ConcurrentHashMap<>();
        try (Progress progress =
                Progress.of(which.size() == 1 ? "update" : "update x" + which.size(), 0)) {
            long started = System.nanoTime();
            List<Future<LabUpdate.Engine>> futures = new ArrayList<>();
            for (RolloutEngine e : which) {
                futures.add(
                        pool.submit(
                                () -> {
                                    String id =
                                            installOnRequest
                                                    ? fetched(e, latest, progress)
                                                    : e.start(null, Duration.ofMinutes(10))
                                                            .getUpdateId();
                                    // progress shown once a second: each answer is a request
                                    // the loader serves on the cores that move the bytes
                                    UpdateProgress ended =
                                            e.await(
                                                    id,
                                                    Duration.ofSeconds(1),
                                                    p -> tally(latest, e.instance(), p, progress));
                                    return LabUpdate.Engine.of(
                                            e.instance(),
                                            ended,
                                            (System.nanoTime() - started) / 1e9);
                                }));
            }
            List<LabUpdate.Engine> results = new ArrayList<>();
            for (Future<LabUpdate.Engine> f : futures) {
                results.add(f.get());
            }
            return new LabUpdate((System.nanoTime() - started) / 1e9, results, Optional.empty());
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Starts {@code e}'s update to install on request, follows it to FETCHED and asks to install
     * (an engine that served through the fetch drains now); returns the update's id.
     */
    private static String fetched(
            RolloutEngine e, Map<String, UpdateProgress> latest, Progress progress) {
        UpdateProgress p = e.startServing(null, Duration.ofMinutes(10));
        UpdateProgress f = e.awaitFetched(p.getUpdateId(), Duration.ofSeconds(10));
        tally(latest, e.instance(), f, progress);
        if (f.getPhase() == UpdatePhase.FETCHED) {
            e.install(p.getUpdateId());
        }
        return p.getUpdateId();
    }

    /** Records {@code instance}'s last answer and shows the sum over every engine's. */
    private static void tally(
            Map<String, UpdateProgress> latest,
            String instance,
            UpdateProgress answer,
            Progress progress) {
        latest.put(instance, answer);
        long done = 0;
        long total = 0;
        SortedSet<UpdatePhase> phases = new TreeSet<>();
        for (UpdateProgress p : latest.values()) {
            done += p.getBytesDone();
            total += p.getBytesTotal();
            phases.add(p.getPhase());
        }
        progress.set(done, total);
        progress.phase(
                String.join(
                        "/",
                        phases.stream().map(p -> p.getValue().toLowerCase(Locale.ROOT)).toList()));
    }

    /**
     * Checks every byte the given engines' workers hold against {@code generation}'s contents (one
     * verifier: each image or shard layout is generated once, its other copies compared with it).
     */
    long verify(List<RolloutEngine> which, long generation) {
        ShmVerifier verifier = new ShmVerifier(manifest, spec.seed(), generation);
        long verified = 0;
        for (RolloutEngine engine : which) {
            verified += verifier.verify(engine.status());
        }
        return verified;
    }

    /**
     * As {@link ShmVerifier#verifyServing}: what {@code engine} serves from after a failed update.
     */
    long verifyServing(RolloutEngine engine, long generation) {
        return new ShmVerifier(manifest, spec.seed(), generation).verifyServing(engine.status());
    }

    /** The model the engines load. */
    SourceManifest manifest() {
        return manifest;
    }
}
